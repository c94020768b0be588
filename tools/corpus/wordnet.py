"""Synonyms from Princeton WordNet 3.0 as Debian's wordnet-base installs it (/usr/share/wordnet),
read directly from its index.* and data.* files (no NLTK): for the corpus generator's
training-only synonym augmentation (gen_corpus.py --synonyms).

File format (wndb(5)): index.POS has one line per lemma, "lemma pos synset_cnt p_cnt [ptr
symbols...] sense_cnt tagsense_cnt synset_offset...", offsets ordered by how often the sense is
used (most frequent first); data.POS has one line per synset, "offset lex_filenum ss_type w_cnt
word lex_id [word lex_id...] p_cnt ... | gloss", w_cnt in hexadecimal. Lemmas with several
words are joined by "_"; adjectives may carry a syntactic marker "(a)", "(p)", "(ip)".
"""
import os
import re

WORDNET_DIR = "/usr/share/wordnet"
POS_FILES = ("noun", "verb", "adj", "adv")


def available(root=WORDNET_DIR):
    return all(os.path.exists(os.path.join(root, "%s.%s" % (kind, pos)))
               for pos in POS_FILES for kind in ("index", "data"))


class WordNet:
    def __init__(self, root=WORDNET_DIR):
        self.senses = {}    # lemma -> {pos: [synset offset, ...] most frequent first}
        self.tagged = {}    # lemma -> {pos: senses of it tagged in WordNet's semantic concordance}
        self.synsets = {}   # (pos, offset) -> [lemma, ...] (spaces for "_")
        for pos in POS_FILES:
            with open(os.path.join(root, "index." + pos), encoding="latin-1") as f:
                for line in f:
                    if line.startswith(" "):   # the licence header
                        continue
                    field = line.split()
                    n_synsets, n_ptrs = int(field[2]), int(field[3])
                    offsets = field[4 + n_ptrs + 2:]
                    assert len(offsets) == n_synsets, line
                    self.senses.setdefault(field[0], {})[pos] = [int(o) for o in offsets]
                    self.tagged.setdefault(field[0], {})[pos] = int(field[4 + n_ptrs + 1])
            with open(os.path.join(root, "data." + pos), encoding="latin-1") as f:
                for line in f:
                    if line.startswith(" "):
                        continue
                    field = line.split(" | ")[0].split()
                    n_words = int(field[3], 16)
                    words = [re.sub(r"\([a-z]+\)$", "", field[4 + 2 * i]).lower().replace("_", " ")
                             for i in range(n_words)]
                    self.synsets[(pos, int(field[0]))] = words

    def synonyms(self, word, senses=2):
        """Lemmas sharing one of the word's `senses` most frequent senses in its commonest part
        of speech (the one with the most tagged senses: "turn" the verb, "seat" the noun), other
        than the word itself, sorted (deterministic)."""
        key = word.lower().replace(" ", "_")
        by_pos = self.senses.get(key)
        if not by_pos:
            return []
        pos = max(POS_FILES, key=lambda p: (p in by_pos, self.tagged[key].get(p, -1)))
        out = set()
        for off in by_pos[pos][:senses]:
            out.update(self.synsets.get((pos, off), ()))
        out.discard(word.lower())
        return sorted(out)

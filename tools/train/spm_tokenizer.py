#!/usr/bin/python3
"""SentencePiece-style vocabulary for cabin's tiny model, learned BPE-style from the corpus.

Vocabulary layout (ids):
  0 <unk> (type 2), 1 <s>, 2 </s>, 3 <|user|>, 4 <|end|>, 5 <|assistant|> (type 3, control),
  6..261 <0x00>..<0xFF> (type 6, byte fallback),
  then every printable ASCII character and U+2581 '▁' as single-character pieces (type 1, score 0),
  then learned pieces (type 1) with score -(merge rank): the first merge scores -1, the next -2...

Encoding is the greedy procedure of engine/tokenizer_spm.c: spaces become '▁', a '▁' is put in
front of the text (and, as cabin does, of every stretch after a special token), the text is split
into characters, and the adjacent pair whose concatenation is a piece with the highest score
(ties: leftmost) is merged until none is left; characters without a piece become byte tokens.
With scores = -(rank) that procedure replays the BPE merges learned here.

Learning: pieces never contain '▁', digits or punctuation; they are built only inside runs of
letters (and inside the literal tags <act> and </act>). So a word tokenizes to the same pieces
wherever it stands: after a space ("▁", "maria") and inside a slot value ("_", "maria"), which
lets a small model copy names and places it has never seen from the request into the action.

usage: spm_tokenizer.py [--corpus build/corpus/train.jsonl] [--vocab-size 1024]
                        [--out build/tokenizer/vocab.json]
"""
import argparse
import collections
import json
import os
import re
import sys

SPACE = "\u2581"
UNK, BOS, EOS, USER, END, ASSISTANT = 0, 1, 2, 3, 4, 5
SPECIALS = ["<unk>", "<s>", "</s>", "<|user|>", "<|end|>", "<|assistant|>"]
TYPE_NORMAL, TYPE_UNKNOWN, TYPE_CONTROL, TYPE_BYTE = 1, 2, 3, 6
N_BYTE = 256
BYTE_BASE = len(SPECIALS)
BASE_CHARS = [SPACE] + [chr(c) for c in range(0x21, 0x7F)]

# Stretches of text inside which merges are learned: the two tags, or a run of letters.
CHUNK_RE = re.compile(r"</?act>|[A-Za-z]+")


def escape(text, add_prefix=True):
    return (SPACE if add_prefix else "") + text.replace(" ", SPACE)


def fragments_of_turn(user, reply):
    """The text stretches (between special tokens) one chat turn contributes."""
    return ["\n" + user, "\n", "\n" + reply, "\n"]


# ---------------------------------------------------------------------------- learning
def learn_merges(chunk_counts, n_merges):
    """Byte-pair merges over chunk_counts {chunk string: count}. Deterministic: the most frequent
    pair wins, ties go to the lexicographically smallest (left, right) pair."""
    words = []      # [symbols list, count]
    for w, c in sorted(chunk_counts.items()):
        if len(w) > 1:
            words.append([list(w), c])
    pair_count = collections.Counter()
    pair_where = collections.defaultdict(set)
    for i, (syms, c) in enumerate(words):
        for a, b in zip(syms, syms[1:]):
            pair_count[(a, b)] += c
            pair_where[(a, b)].add(i)
    merges = []
    seen = set()
    while len(merges) < n_merges and pair_count:
        cnt = max(pair_count.values())
        a, b = min(p for p, c in pair_count.items() if c == cnt)
        if cnt < 1:
            break
        merged = a + b
        for i in sorted(pair_where.pop((a, b), ())):
            syms, c = words[i]
            for x, y in zip(syms, syms[1:]):
                pair_count[(x, y)] -= c
                if pair_count[(x, y)] <= 0:
                    del pair_count[(x, y)]
            out = []
            j = 0
            while j < len(syms):
                if j + 1 < len(syms) and syms[j] == a and syms[j + 1] == b:
                    out.append(merged)
                    j += 2
                else:
                    out.append(syms[j])
                    j += 1
            words[i][0] = out
            for x, y in zip(out, out[1:]):
                pair_count[(x, y)] += c
                pair_where[(x, y)].add(i)
        pair_count.pop((a, b), None)
        if merged not in seen:
            seen.add(merged)
            merges.append(merged)
    return merges


def build_vocab(merges):
    tokens, scores, types = [], [], []
    for i, s in enumerate(SPECIALS):
        tokens.append(s)
        scores.append(0.0)
        types.append(TYPE_UNKNOWN if i == UNK else TYPE_CONTROL)
    for b in range(N_BYTE):
        tokens.append("<0x%02X>" % b)
        scores.append(0.0)
        types.append(TYPE_BYTE)
    for ch in BASE_CHARS:
        tokens.append(ch)
        scores.append(0.0)
        types.append(TYPE_NORMAL)
    have = set(tokens)
    rank = 0
    for m in merges:
        if m in have:
            continue
        rank += 1
        tokens.append(m)
        scores.append(-float(rank))
        types.append(TYPE_NORMAL)
        have.add(m)
    return {"tokens": tokens, "scores": scores, "types": types}


# ---------------------------------------------------------------------------- encoding
class Tokenizer:
    """Encodes exactly as engine/tokenizer_spm.c does for this vocabulary."""

    def __init__(self, vocab):
        self.tokens = vocab["tokens"]
        self.scores = vocab["scores"]
        self.types = vocab["types"]
        self.piece_id = {}
        for i, (t, ty) in enumerate(zip(self.tokens, self.types)):
            if ty == TYPE_NORMAL:
                self.piece_id.setdefault(t, i)
        self.special = {t: i for i, (t, ty) in enumerate(zip(self.tokens, self.types))
                        if ty in (TYPE_UNKNOWN, TYPE_CONTROL)}
        self.special_by_len = sorted(self.special, key=lambda s: (-len(s), s))
        # Characters that occur inside some multi-character piece; every other character is a
        # boundary no merge can cross, so text can be split there and each part encoded alone.
        self.joinable = set()
        for t, ty in zip(self.tokens, self.types):
            if ty == TYPE_NORMAL and len(t) > 1:
                self.joinable.update(t)
        self.memo = {}
        self.n_vocab = len(self.tokens)

    def _greedy(self, seg):
        """engine/tokenizer_spm.c's merge loop on one segment (a list of characters)."""
        syms = list(seg)
        while len(syms) > 1:
            best, best_i = None, -1
            for i in range(len(syms) - 1):
                pid = self.piece_id.get(syms[i] + syms[i + 1])
                if pid is not None:
                    sc = self.scores[pid]
                    if best is None or sc > best:
                        best, best_i = sc, i
            if best_i < 0:
                break
            syms[best_i:best_i + 2] = [syms[best_i] + syms[best_i + 1]]
        out = []
        for s in syms:
            pid = self.piece_id.get(s)
            if pid is not None:
                out.append(pid)
            else:
                for byte in s.encode("utf-8"):
                    out.append(BYTE_BASE + byte)
        return out

    def _segment(self, seg):
        ids = self.memo.get(seg)
        if ids is None:
            ids = self._greedy(seg)
            if len(self.memo) < 500000:
                self.memo[seg] = ids
        return ids

    def encode_fragment(self, text, add_prefix=True):
        """One stretch of text between special tokens."""
        if not text:
            return []
        e = escape(text, add_prefix)
        out = []
        start = 0
        for i, ch in enumerate(e):
            if ch not in self.joinable:
                if i > start:
                    out.extend(self._segment(e[start:i]))
                out.extend(self._segment(ch))
                start = i + 1
        if start < len(e):
            out.extend(self._segment(e[start:]))
        return out

    def encode(self, text, add_bos=False, parse_special=True):
        """Whole text, as tokenizer_encode(add_special=add_bos, parse_special) in C."""
        out = [BOS] if add_bos else []
        i = frag = 0
        while i < len(text):
            hit = None
            if parse_special:
                for s in self.special_by_len:
                    if text.startswith(s, i):
                        hit = s
                        break
            if hit is None:
                i += 1
                continue
            out.extend(self.encode_fragment(text[frag:i]))
            out.append(self.special[hit])
            i += len(hit)
            frag = i
        out.extend(self.encode_fragment(text[frag:]))
        return out

    def encode_session(self, turns):
        """Token ids of a chat session and, per id, its training role: 0 context (no loss),
        2 a reply's action tokens, 1 the rest of the reply and its closing <|end|>, 3 the user's
        text and its closing <|end|> (trained only with train.py --user-weight). Layout (phi-3):
        <s><|user|>\\n{user}<|end|>\\n<|assistant|>\\n{reply}<|end|>\\n<|user|>...
        A turn marked "new": true (tools/corpus/smalltalk.py: what the model is being taught
        afresh) has roles 5 and 6 for 1 and 2, so that train.py --distill leaves its replies to
        the data alone; a turn marked "teacher": true (a text the model is not taught, where
        train.py --distill holds it to the model it starts from) has roles 9 and 10."""
        ids, target = [BOS], [0]
        for t in turns:
            mark = 4 if t.get("new") else 8 if t.get("teacher") else 0
            text = self.encode_fragment("\n" + t["user"])
            tail = self.encode_fragment("\n") + [ASSISTANT]
            ids += [USER] + text + [END] + tail
            target += [0] + [3] * (len(text) + 1) + [0] * len(tail)
            lead = self.encode_fragment("\n")            # the "\n" after <|assistant|>: prompt
            r = self.encode_fragment("\n" + t["reply"])
            assert r[:len(lead)] == lead, "reply does not start with the template's newline"
            ids += r + [END]
            # 2 for the action (up to and including </act>), 1 for the sentence and <|end|>.
            n_act, text = len(r), ""
            for j in range(len(lead), len(r)):
                text += self.tokens[r[j]]
                if "</act>" in text:
                    n_act = j + 1
                    break
            target += [0] * len(lead) + [2 + mark] * (n_act - len(lead)) + [1 + mark] * (len(r) - n_act + 1)
            nl = self.encode_fragment("\n")
            ids += nl
            target += [0] * len(nl)
        return ids, target

    def prompt_ids(self, history, user):
        """Ids the C engine evaluates for a new user turn: the rendered turn prefix."""
        ids = [BOS] if not history else []
        ids += [USER] + self.encode_fragment("\n" + user) + [END] + self.encode_fragment("\n") + [ASSISTANT] + \
            self.encode_fragment("\n")
        return ids

    def decode(self, ids):
        bs = bytearray()
        for i in ids:
            ty = self.types[i]
            if ty == TYPE_BYTE:
                bs.append(int(self.tokens[i][3:5], 16))
            elif ty == TYPE_NORMAL:
                bs.extend(self.tokens[i].replace(SPACE, " ").encode("utf-8"))
        return bs.decode("utf-8", errors="replace")


def load(path):
    with open(path) as f:
        return Tokenizer(json.load(f))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default="build/corpus/train.jsonl")
    ap.add_argument("--vocab-size", type=int, default=1024)
    ap.add_argument("--out", default="build/tokenizer/vocab.json")
    a = ap.parse_args()
    chunk_counts = collections.Counter()
    n_dialogues = 0
    with open(a.corpus) as f:
        for line in f:
            n_dialogues += 1
            for t in json.loads(line)["turns"]:
                for frag in fragments_of_turn(t["user"], t["reply"]):
                    for m in CHUNK_RE.finditer(escape(frag)):
                        chunk_counts[m.group(0)] += 1
    n_fixed = len(SPECIALS) + N_BYTE + len(BASE_CHARS)
    merges = learn_merges(chunk_counts, a.vocab_size - n_fixed)
    vocab = build_vocab(merges)
    if len(vocab["tokens"]) != a.vocab_size:
        print("spm_tokenizer: only %d pieces could be learned (asked for %d)"
              % (len(vocab["tokens"]), a.vocab_size), file=sys.stderr)
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(vocab, f, ensure_ascii=True)
    # Corpus size in tokens, as the model will see it.
    tok = Tokenizer(vocab)
    n_tokens = n_target = 0
    with open(a.corpus) as f:
        for line in f:
            ids, tgt = tok.encode_session(json.loads(line)["turns"])
            n_tokens += len(ids)
            n_target += sum(1 for x in tgt if x in (1, 2))
    print("spm_tokenizer: %d dialogues, %d distinct chunks -> vocab %d (%d learned) -> %s; "
          "corpus %d tokens (%d reply targets)"
          % (n_dialogues, len(chunk_counts), len(vocab["tokens"]), len(vocab["tokens"]) - n_fixed,
             a.out, n_tokens, n_target))


if __name__ == "__main__":
    main()

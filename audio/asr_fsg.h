// The grammar network made small before pocketsphinx searches it (audio/asr.c's use).
//
// jsgf_build_fsg writes a state for every word position and every alternative's junction, and
// copies a rule's whole network at each reference: assets/asr/cabin.gram becomes ~20,000
// states. pocketsphinx's grammar search pays for every state in every frame, active or not
// (its history sweep visits states x context phones each 10 ms), so the network's size, not
// the search's beam, sets most of recognition's CPU. fsg_compact merges states that cannot be
// told apart: the same outgoing arcs (word, log-probability, merged target) and the same
// finality, or the same incoming arcs from merged sources and the same start-ness. Every word
// sequence keeps its best path's weight, so the search's best path is unchanged.
#ifndef CABIN_AUDIO_ASR_FSG_H
#define CABIN_AUDIO_ASR_FSG_H

#include <sphinxbase/fsg_model.h>

// A new network equivalent to f (same words, same weights on every word sequence) with merged
// states and without states that lead nowhere; NULL when f has a cycle among its arcs (the
// grammar's own loops: it is then searched as it is). The caller frees both.
fsg_model_t *fsg_compact(fsg_model_t *f);

// Where a reading (words separated by spaces; words the network lacks, hesitations, are passed
// over) leads in the network: 0 off it (no path takes those words in that order), else
// FSG_WHOLE when it can end there (a whole command), FSG_MORE when a word may follow (silence
// and filler loops are not words), FSG_ENDS when it is whole and ending there is at least four
// times as likely as its likeliest way on to a longer command (each state's weights taken as a
// distribution; the network's log-probabilities are divided by `scale` first, the factor they
// were multiplied by).
enum { FSG_WHOLE = 1, FSG_MORE = 2, FSG_ENDS = 4 };
int fsg_reading(fsg_model_t *f, const char *words, double scale);

#endif

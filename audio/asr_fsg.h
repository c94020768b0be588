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

#endif

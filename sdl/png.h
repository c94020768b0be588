// A PNG writer: 8-bit RGB, no interlace, every row filter 0 (none), the pixels deflated by zlib
// (compress2), one optional tEXt chunk. Used by `snapshot FILE.png`.
#ifndef CABIN_SDL_PNG_H
#define CABIN_SDL_PNG_H

#include "base/err.h"

#include <stdint.h>

// rgb: h rows of w * 3 bytes, top row first. key/text: a tEXt chunk (Latin-1; NULL: none).
// The file is written whole or not at all.
int png_write_rgb(const char *path, const uint8_t *rgb, int w, int h, const char *key, const char *text, errbuf *err);

#endif

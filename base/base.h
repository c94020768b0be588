// The basics every layer may use: errors, allocation, clocks, threads, strings, user folders,
// files written whole or not at all. Depends on nothing of cabin's.
#ifndef CABIN_BASE_H
#define CABIN_BASE_H

#include "base/afile.h"
#include "base/clock.h"
#include "base/dirs.h"
#include "base/err.h"
#include "base/mem.h"
#include "base/prio.h"
#include "base/stopsig.h"
#include "base/str.h"
#include "base/threads.h"

#endif

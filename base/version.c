#include "base/version.h"

#ifndef CABIN_COMMIT
#define CABIN_COMMIT "unknown"
#endif

const char *cabin_commit(void) { return CABIN_COMMIT; }

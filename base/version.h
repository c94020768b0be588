// What cabin this is: the release number and the commit it was built from.
#ifndef CABIN_BASE_VERSION_H
#define CABIN_BASE_VERSION_H

#define CABIN_VERSION "0.3.0"

// The commit the build was made from ("82ddb33", with "-dirty" when the tree had changes), or
// "unknown" outside a git checkout. Set by the Makefile on base/version.c alone, so a new commit
// rebuilds one file.
const char *cabin_commit(void);

#endif

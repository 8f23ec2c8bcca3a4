#ifndef PACER_CMALLOC_SHIM_H
#define PACER_CMALLOC_SHIM_H
/* glibc's malloc tuning (mallopt), which Swift's Glibc module leaves out. */
#include <malloc.h>
#endif

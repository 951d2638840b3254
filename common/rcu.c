/*
 * The synchronisation token of the TSan annotations in rcu.h. Its address
 * is all that matters; it is defined in every build so that the library
 * has the same symbols with and without TSan.
 */
#include "rcu.h"

char rhkv_rcu__tsan_token;

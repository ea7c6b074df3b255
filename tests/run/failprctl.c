/* LD_PRELOAD shim for tests/run/test_exit_paths.py: prctl(PR_SET_CHILD_SUBREAPER) fails
 * with EPERM, as under a seccomp policy that denies it; every other prctl goes to libc.
 * The wrapper looks prctl up through ctypes.CDLL(None), which searches preloaded objects
 * first, so this one is found instead of glibc's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/prctl.h>

int prctl(int option, ...) {
    va_list args;
    va_start(args, option);
    unsigned long a2 = va_arg(args, unsigned long);
    unsigned long a3 = va_arg(args, unsigned long);
    unsigned long a4 = va_arg(args, unsigned long);
    unsigned long a5 = va_arg(args, unsigned long);
    va_end(args);
    if (option == PR_SET_CHILD_SUBREAPER) {
        errno = EPERM;
        return -1;
    }
    int (*real)(int, ...) = (int (*)(int, ...))dlsym(RTLD_NEXT, "prctl");
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    return real(option, a2, a3, a4, a5);
}

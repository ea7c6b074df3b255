/* noreaper PROGRAM ARGS...: runs PROGRAM under a seccomp filter that makes
 * prctl(PR_SET_CHILD_SUBREAPER) fail with EPERM (every other system call is allowed), as a
 * container's seccomp policy that denies it would. For tests/run/test_exit_paths.py: a
 * filter works the same for the Python wrapper (prctl through ctypes and libc) and for the
 * static native binary (a raw system call, which no LD_PRELOAD shim could intercept). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "noreaper: add this architecture's AUDIT_ARCH"
#endif

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: noreaper PROGRAM ARGS...\n");
        return 2;
    }
    struct sock_filter filter[] = {
        /* Another architecture's system call numbers mean other calls: allow them. */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_prctl, 0, 3),
        /* The option's low 32 bits (little-endian): all of PR_SET_CHILD_SUBREAPER. */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_CHILD_SUBREAPER, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = {.len = sizeof(filter) / sizeof(filter[0]), .filter = filter};
    /* Without privileges a filter needs no_new_privs (and it costs the test nothing). */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
        perror("noreaper: installing the seccomp filter");
        return 1;
    }
    execvp(argv[1], argv + 1);
    perror("noreaper: exec");
    return 127;
}

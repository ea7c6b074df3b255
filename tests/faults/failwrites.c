/* LD_PRELOAD shim: make writes to files under a directory fail with a chosen errno.
 *
 * The kernel here has no device-mapper (dm-error, dm-flakey), and a filesystem cannot be
 * remounted read-only while the daemon holds its journal open for writing (EBUSY), so EIO
 * and EROFS on a live daemon are injected at the syscall boundary instead: SQLite's own
 * unix VFS calls these functions and sees the errno exactly as a failing disk returns it.
 *
 * FAILWRITES_DIR      only files whose path starts with it are affected
 * FAILWRITES_CONTROL  while this file exists, its first number is the errno to fail with
 *                     (e.g. 5 = EIO, 30 = EROFS); remove it and writes succeed again
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static int failing_errno(int fd) {
    const char *control = getenv("FAILWRITES_CONTROL");
    const char *dir = getenv("FAILWRITES_DIR");
    if (!control || !dir || access(control, F_OK) != 0) return 0;
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0) return 0;
    target[n] = '\0';
    if (strncmp(target, dir, strlen(dir)) != 0) return 0;
    int code = EIO;
    FILE *f = fopen(control, "r");
    if (f) {
        if (fscanf(f, "%d", &code) != 1) code = EIO;
        fclose(f);
    }
    return code;
}

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

ssize_t write(int fd, const void *buf, size_t count) {
    int e = failing_errno(fd);
    if (e) { errno = e; return -1; }
    return NEXT(write)(fd, buf, count);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    int e = failing_errno(fd);
    if (e) { errno = e; return -1; }
    return NEXT(pwrite)(fd, buf, count, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off64_t offset) {
    int e = failing_errno(fd);
    if (e) { errno = e; return -1; }
    return NEXT(pwrite64)(fd, buf, count, offset);
}

int fsync(int fd) {
    int e = failing_errno(fd);
    if (e) { errno = e; return -1; }
    return NEXT(fsync)(fd);
}

int fdatasync(int fd) {
    int e = failing_errno(fd);
    if (e) { errno = e; return -1; }
    return NEXT(fdatasync)(fd);
}

int ftruncate(int fd, off_t length) {
    int e = failing_errno(fd);
    if (e) { errno = e; return -1; }
    return NEXT(ftruncate)(fd, length);
}

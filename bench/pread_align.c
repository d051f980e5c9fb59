/* How fast pread copies a file out of the page cache, by where the destination lies against the source modulo 4 KiB
 * (common/buf.h: AMD Zen's rep movsb slows about 9x at distances of 1 to 31 bytes).
 * Usage: pread_align FILE   (a file of a few MB, read once before so that it is in the page cache) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    const int fd = open(argv[1], O_RDONLY);
    const off_t size = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);
    if (size < 8192) return 1;
    const size_t n = (size_t)size - 4096, cap = n + 8192;
    unsigned char *buf = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) return 1;
    memset(buf, 1, cap);
    static const size_t distances[] = {0, 8, 16, 31, 32, 64, 100};
    for (size_t k = 0; k < sizeof distances / sizeof *distances; k++) {
        const int reps = 200;
        const double t = now();
        for (int i = 0; i < reps; i++)
            if (pread(fd, buf + distances[k], n, 0) != (ssize_t)n) return 1;
        printf("distance %3zu: %6.2f GB/s\n", distances[k], reps * (double)n / (now() - t) / 1e9);
    }
    return 0;
}

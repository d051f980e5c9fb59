/* Sampling of the long exhaustive unit tests, for `make test` (the Release ctest: 1/8, Makefile's UNIT_SAMPLE) and
 * the sanitizer builds (`make test-asan`, where they run 5-10 times slower: 1/32): ZGPU_TEST_SAMPLE=1/N runs about
 * one case in N, ZGPU_TEST_SAMPLE=1/N:SEED the sample of one seed. Unset (`make test-long`, `make test-fast`, ctest
 * run by hand), every case runs.
 *
 * A case is taken when the golden-ratio sequence seed + i * 0.618... (mod 1) falls below 1/N, i counting the
 * calls of zt_take(): every stretch of cases then gives close to one in N (so a loop's counts scale with 1/N and
 * no value of an inner loop is skipped for a whole run, as a stride of N would), and each seed a different
 * sample. The seed comes from the clock unless given, and is printed: a failure in a sample runs again with it.
 * A test must generate every case's input whether it is taken or not (its random generator advances the same
 * way), so that a case has the same bytes in a sample as in a whole run. */
#ifndef ZG_TEST_SAMPLING_H
#define ZG_TEST_SAMPLING_H
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static unsigned zt_sample_n = 1;    /* 1: every case */
static uint64_t zt_sample_pos;      /* the sequence's value for the next case */
static uint64_t zt_sample_limit;    /* taken when below: 2^64 / N */
static uint64_t zt_sample_seen, zt_sample_taken;

/* Reads ZGPU_TEST_SAMPLE; prints what runs. A malformed value is an error (exit 2): a test that silently ran
 * whole or not at all would mislead. */
static void zt_sample_init(void) {
    const char *v = getenv("ZGPU_TEST_SAMPLE");
    if (!v || !*v) return;
    unsigned n = 0;
    uint64_t seed = 0;
    int used = 0;
    const int fields = sscanf(v, "1/%u%n:%" SCNu64 "%n", &n, &used, &seed, &used);
    if (fields < 1 || n < 1 || v[used] != '\0') {
        fprintf(stderr, "ZGPU_TEST_SAMPLE must be 1/N or 1/N:SEED (N >= 1), got \"%s\"\n", v);
        exit(2);
    }
    if (fields < 2) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
    }
    zt_sample_n = n;
    zt_sample_limit = n > 1 ? UINT64_MAX / n : UINT64_MAX;
    zt_sample_pos = seed * 0x2545F4914F6CDD1Dull; /* the seed spread over the circle */
    if (n > 1)
        printf("sampled: about 1 case in %u (ZGPU_TEST_SAMPLE=1/%u:%" PRIu64 " runs this sample again; unset, every "
               "case)\n", n, n, seed);
}

/* 1 when the next case runs. */
__attribute__((unused)) static int zt_take(void) {
    zt_sample_seen++;
    if (zt_sample_n <= 1) return ++zt_sample_taken, 1;
    const int take = zt_sample_pos < zt_sample_limit;
    zt_sample_pos += 0x9E3779B97F4A7C15ull; /* 2^64 / golden ratio */
    zt_sample_taken += (uint64_t)take;
    return take;
}

/* 1 when the test runs a sample (aggregate thresholds then scale: zt_enough). */
__attribute__((unused)) static int zt_sampled(void) { return zt_sample_n > 1; }

/* A count that a whole run must take above `whole`: in a sample, at least a quarter of its share (the sequence
 * keeps a long stretch's share close to 1/N; the quarter leaves room for the cases of one kind being fewer), and
 * nothing asked where that share rounds to 0. For counts over a few dozen cases, check whole runs only
 * (`if (!zt_sampled())`). */
__attribute__((unused)) static int zt_enough(uint64_t count, uint64_t whole) {
    return zt_sample_n > 1 ? count >= whole / (4 * (uint64_t)zt_sample_n) : count > whole;
}

/* One line at the end: how many cases ran. */
__attribute__((unused)) static void zt_sample_report(void) {
    if (zt_sample_n > 1)
        printf("sampled: %" PRIu64 " of %" PRIu64 " cases ran\n", zt_sample_taken, zt_sample_seen);
}

#endif

/* A stand-in for llama.cpp's llama-server and unified `llama` binaries: a real process with a real
 * /proc/PID/cmdline, environ and exe, for the detections' tests where loading a model would add
 * nothing. It answers --version exactly as llama.cpp does (common/build-info.cpp.in,
 * llama_print_build_info: on stderr from llama-server's --version handler, common/arg.cpp l.1453-1460;
 * on stdout from `llama --version`, app/llama.cpp l.82-85), with the build it was compiled for
 * (-DBUILD=N; 0 is what a build without git information prints), and otherwise waits until it is
 * told to stop. It never reads its options: what they mean is for the audit to work out. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef BUILD
#define BUILD 0
#endif
#ifndef COMMIT
#define COMMIT "unknown"
#endif

static void print_build_info(FILE *stream) {
    fprintf(stream, "version: 0.6.0-dev (build %d, commit %s)\n", BUILD, COMMIT);
    fprintf(stream, "built with GNU 12.2.0 for Linux x86_64\n");
}

int main(int argc, char **argv) {
    const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    int unified = strcmp(name, "llama") == 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--version") == 0) {
            print_build_info(unified && i == 1 ? stdout : stderr);
            return 0;
        }
    }
    for (;;) {
        pause();
    }
}

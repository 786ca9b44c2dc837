/* Stands in for a CUDA program on machines without a GPU: does what the CUDA driver does
 * with CUDA_INJECTION64_PATH (load it, call InitializeInjection), echoes its input and
 * exits with the status given as argument. Lets CI test record's plumbing end to end. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    const char *lib = getenv("CUDA_INJECTION64_PATH");
    if (lib) {
        void *h = dlopen(lib, RTLD_NOW);
        int (*init)(void) = NULL;
        if (h)
            *(void **)&init = dlsym(h, "InitializeInjection");
        if (!init) {
            fprintf(stderr, "fake_cuda_app: cannot load %s\n", lib);
            return 99;
        }
        init();
    }
    char line[256];
    while (fgets(line, sizeof line, stdin))
        printf("echo: %s", line);
    return argc > 1 ? atoi(argv[1]) : 0;
}

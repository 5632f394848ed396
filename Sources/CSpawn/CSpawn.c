#define _GNU_SOURCE
#include "CSpawn.h"
#include <fcntl.h>
#include <unistd.h>

int tl_spawn_add_close_from(posix_spawn_file_actions_t *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}

int tl_spawn_add_chdir(posix_spawn_file_actions_t *actions, const char *directory) {
    return posix_spawn_file_actions_addchdir_np(actions, directory);
}

int tl_pipe_cloexec(int ends[2]) { return pipe2(ends, O_CLOEXEC); }

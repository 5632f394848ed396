#ifndef TOUCHLINE_CSPAWN_H
#define TOUCHLINE_CSPAWN_H

/* glibc extensions that Swift's Glibc module does not import (they need
   _GNU_SOURCE), for the test-only ChildProcesses module. */
#include <spawn.h>

/// Adds "close every descriptor from `lowest` up" to `actions` (glibc 2.34+), so a child keeps
/// only the descriptors it was given, whatever else the parent has open. 0, or an errno value.
int tl_spawn_add_close_from(posix_spawn_file_actions_t *actions, int lowest);
/// Adds "change to `directory`" to `actions` (glibc 2.29+). 0, or an errno value.
int tl_spawn_add_chdir(posix_spawn_file_actions_t *actions, const char *directory);

/// pipe2(ends, O_CLOEXEC): a pipe no other child can inherit, even one spawned at the same moment.
/// 0, or -1 with errno set.
int tl_pipe_cloexec(int ends[2]);

#endif

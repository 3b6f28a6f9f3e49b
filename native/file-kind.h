/* What a file that is not a regular one is, in the words both local-back-end addons
 * (read-files.c, reserve-file.c) answer with and src/local/regular-file.ts's KIND_TEXT reads. */
#ifndef PODIPAM_FILE_KIND_H
#define PODIPAM_FILE_KIND_H
#include <sys/stat.h>

static inline const char *kind_of_mode(mode_t m) {
  if (S_ISDIR(m)) return "directory";
  if (S_ISFIFO(m)) return "fifo";
  if (S_ISSOCK(m)) return "socket";
  if (S_ISCHR(m)) return "char";
  if (S_ISBLK(m)) return "block";
  if (S_ISLNK(m)) return "symlink";
  return "other";
}

#endif

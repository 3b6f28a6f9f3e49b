{
  "targets": [
    {
      "target_name": "flock",
      "sources": ["native/flock.c"]
    },
    {
      "target_name": "peercred",
      "sources": ["native/peercred.c"]
    },
    {
      "target_name": "read_files",
      "sources": ["native/read-files.c"]
    },
    {
      "target_name": "dir_watch",
      "sources": ["native/dir-watch.c"]
    },
    {
      "target_name": "reserve_file",
      "sources": ["native/reserve-file.c"]
    },
    {
      "target_name": "sched",
      "sources": ["native/sched.c"]
    }
  ]
}

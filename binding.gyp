{
  "targets": [
    {
      "target_name": "flock",
      "sources": ["native/flock.c"]
    },
    {
      "target_name": "peercred",
      "sources": ["native/peercred.c"]
    }
  ]
}

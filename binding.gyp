{
  "targets": [
    {
      "target_name": "flock",
      "sources": ["native/flock.c"]
    }
  ]
}

package server

import "os"

// longForm says whether the long forms of the slow tests run
// (BLOOMKIT_LONG=1, as `make test-long` sets). `make test` runs their short
// forms, which still exercise the same paths and can fail for the same
// defects, with fewer keys, rounds or bytes.
func longForm() bool { return os.Getenv("BLOOMKIT_LONG") != "" }

"""Before any job runs: each job's resources estimated from the case alone (threads, memory,
run time, GPUs), the checks that refuse a case that cannot fit the machine or whose mesh file is
far too coarse, and the hypersensitivity warnings of single-frequency TS."""

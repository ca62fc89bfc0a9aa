"""Linear algebra: GMRES for many right-hand sides, and triangular solves on the device."""

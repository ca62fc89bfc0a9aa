/* What the volume and the surface kernels share (kernel_source.py); after the #defines of
   REAL and ALIGN4 (its size times 4). */
typedef REAL real;
struct __align__(ALIGN4) real4 { real a, b, c, d; };
#ifndef SHARED_POOL  /* static up to 48 KB (the row layout measured faster so), dynamic above */
#if STATIC_POOL
#define SHARED_POOL(name, bytes) __shared__ __align__(32) unsigned char name[bytes]
#else
#define SHARED_POOL(name, bytes) extern __shared__ __align__(32) unsigned char name[]
#endif
#endif

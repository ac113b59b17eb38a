/*
** rdzv.h -- where the ranks of a job started by a launcher (torchrun, srun,
** mpirun) meet to share rank 0's NVSHMEM unique id:
**
**   tcp://host:port   a c10d TCP store (tcpstore.h): torchrun's, at MASTER_ADDR:MASTER_PORT;
**   file:/path        a file every rank reads (on a shared file system when the job
**                     spans nodes); rank 0 writes it whole (a temporary file renamed
**                     over it), the others poll until it holds this job's value.
**
** Every wait ends at the timeout with a message naming the rendezvous.
*/
#ifndef MGPU_RDZV_H
#define MGPU_RDZV_H

#include <stdbool.h>
#include <stddef.h>

#define RDZV_MAX_VALUE 1024   /* bytes of the value exchanged */

/* Rank 0 publishes val (n bytes) under key; every other rank of the count waits
** for it up to timeout_ms and reads it into val.  key names this job: a value an
** earlier job left under another key (or for another rank count) is never taken.
** False with the reason in why. */
bool rdzv_exchange(const char *where, const char *key, int rank, int count, int timeout_ms, unsigned char *val,
                   size_t n, char *why, size_t nwhy);

#endif

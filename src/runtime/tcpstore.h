/*
** tcpstore.h -- a client of PyTorch's c10d TCP store (torch.distributed.TCPStore,
** the key-value server torchrun's agent keeps at MASTER_ADDR:MASTER_PORT for its
** workers), written from the wire protocol, with no torch code or library.
**
** Only what a rendezvous needs: connect and greet the server with VALIDATE (torch's
** servers drop a client whose first query is anything else), set a key, and wait for
** a key and read it.  A query is one byte (torch's QueryType number), then its
** arguments: strings and byte values as a native-endian u64 length and the bytes,
** key counts as a u64.  Keys get the "/" torch's own clients put in front of every
** key, so torch reads them under the same names.  Every call ends at a deadline
** (time_ms() milliseconds) instead of blocking.
*/
#ifndef MGPU_TCPSTORE_H
#define MGPU_TCPSTORE_H

#include <stdbool.h>
#include <stddef.h>

#define TCPSTORE_MAX_KEY 256       /* bytes of a key, the "/" included */
#define TCPSTORE_MAX_VALUE 4096    /* bytes of a value */

typedef struct tcpstore {
  int fd;
  char where[300];                 /* "host:port", for messages */
} tcpstore;

/* Connect to host:port and validate, retrying while nothing listens there yet (the
** store may start after this process) until deadline.  False with the reason in why. */
bool tcpstore_connect(tcpstore *s, const char *host, const char *port, double deadline, char *why, size_t n);
/* key = value (len bytes). */
bool tcpstore_set(tcpstore *s, const char *key, const void *val, size_t len, double deadline, char *why, size_t n);
/* Wait until key is set, then read its value: at most cap bytes into val, its size
** in *len.  On a timeout *len is 0 and why says the key never came. */
bool tcpstore_get(tcpstore *s, const char *key, void *val, size_t cap, size_t *len, double deadline, char *why, size_t n);
void tcpstore_close(tcpstore *s);

#endif

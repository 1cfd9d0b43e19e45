/* libkcheck/base/report_buf.h — the report's byte stream: records are copied into
 * an in-memory ring (about a microsecond) and a background thread writes
 * them to the file every few milliseconds. Each byte has a fixed file offset
 * (pwrite), so a fatal signal handler can write the committed bytes again
 * without duplicating any: after a crash the file holds every record
 * completed before it. Records appended with kc_rbuf_appendv_through are
 * in the file (write(2) returned) before the append returns, with every
 * byte before them: SIGKILL or _exit loses only the ring's records
 * appended after the last such record (launch and trace records). */
#ifndef KC_REPORT_BUF_H
#define KC_REPORT_BUF_H

#include <stddef.h>

/* Takes over fd (an empty file opened for writing). 0 on success. */
int kc_rbuf_open(int fd);
/* Appends n bytes: a part of a record, or all of it. Appends from several
 * threads are serialised by the caller (the report lock), so a record's
 * parts stay together. 0 on success. */
int kc_rbuf_append(const void *p, size_t n);
/* Appends several parts (one record) under one lock, committed together. */
struct kc_rbuf_part {
  const void *p;
  size_t n;
};
int kc_rbuf_appendv(const struct kc_rbuf_part *parts, int nparts);
/* kc_rbuf_appendv, written to the file before it returns (not only the
 * page cache's: a SIGKILL cannot lose it; a power loss can). */
int kc_rbuf_appendv_through(const struct kc_rbuf_part *parts, int nparts);
/* Writes everything appended so far to the file and waits for it. */
int kc_rbuf_flush(void);
/* Flushes, stops the writer thread and closes the file. */
void kc_rbuf_close(void);
/* Fork handlers: no thread may hold the ring's lock across fork. */
void kc_rbuf_lock(void);
void kc_rbuf_unlock(void);
/* In the child: the parent's writer thread does not exist there, and the
 * ring's bytes belong to the parent's file; forget both. */
void kc_rbuf_forget_child(void);

#endif

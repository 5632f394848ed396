#ifndef TOUCHLINE_CSHIMS_H
#define TOUCHLINE_CSHIMS_H

/* One-line C wrappers for OpenSSL macros and libevent constructs that Swift cannot import.
   sys/types.h first: see the note in CLibevent's shim.h. */
#include <sys/types.h>
#include <openssl/ssl.h>
#include <event2/event.h>
#include <event2/bufferevent.h>

int tl_ssl_set_sni(SSL *ssl, const char *name);
int tl_ssl_ctx_set_min_tls12(SSL_CTX *ctx);
void tl_ssl_ctx_set_release_buffers(SSL_CTX *ctx);
void tl_openssl_free(void *p);
long tl_bio_mem_data(BIO *bio, char **out);
/// Makes a server context accept only "h2" via ALPN; a client without it gets no ALPN answer.
void tl_ssl_ctx_select_alpn_h2(SSL_CTX *ctx);
/// Copies the oldest OpenSSL error string of this thread into buf (empty when none) and clears the queue.
void tl_ssl_last_error(char *buf, size_t len);

/// The calling thread's kernel id (what setpriority takes for one thread).
pid_t tl_thread_id(void);
/// Names the calling thread for the system (at most 15 bytes are kept; longer names are cut).
void tl_set_thread_name(const char *name);
/// Asks the fair scheduler for a time slice of `nanoseconds` for the calling thread. 0, or -1.
int tl_set_thread_slice(unsigned long long nanoseconds);
/// Generates a P-256 key: the private half as unencrypted PKCS#8 PEM (an APNs .p8, mode 0600),
/// the public half as PEM (skipped when public_path is NULL). 0, or -1 with a message in err.
int tl_dev_write_p256_key(const char *private_path, const char *public_path, char *err, size_t len);
/// Writes a new development CA certificate and a server certificate (localhost, 127.0.0.1, ::1)
/// signed by it, with the server's private key. The CA's key is not kept. 0, or -1 with err.
int tl_dev_write_tls_files(const char *ca_certificate_path, const char *server_certificate_path, const char *server_key_path,
                           int days, char *err, size_t len);

#endif

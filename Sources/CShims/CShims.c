#include "CShims.h"
#include <openssl/err.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>

int tl_ssl_set_sni(SSL *ssl, const char *name) { return (int)SSL_set_tlsext_host_name(ssl, name); }

int tl_ssl_ctx_set_min_tls12(SSL_CTX *ctx) { return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION); }

void tl_ssl_ctx_set_release_buffers(SSL_CTX *ctx) { SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS); }

void tl_openssl_free(void *p) { OPENSSL_free(p); }

long tl_bio_mem_data(BIO *bio, char **out) { return BIO_get_mem_data(bio, out); }

static int select_h2(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                     const unsigned char *in, unsigned int inlen, void *arg) {
    (void)ssl; (void)arg;
    for (unsigned int i = 0; i + 1 <= inlen;) {
        unsigned int n = in[i];
        if (i + 1 + n > inlen) break;
        if (n == 2 && memcmp(in + i + 1, "h2", 2) == 0) {
            *out = in + i + 1;
            *outlen = 2;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + n;
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

void tl_ssl_ctx_select_alpn_h2(SSL_CTX *ctx) { SSL_CTX_set_alpn_select_cb(ctx, select_h2, NULL); }

void tl_ssl_last_error(char *buf, size_t len) {
    unsigned long e = ERR_get_error();
    if (len == 0) return;
    buf[0] = 0;
    if (e != 0) ERR_error_string_n(e, buf, len);
    ERR_clear_error();
}

#include <sys/syscall.h>
#include <unistd.h>

pid_t tl_thread_id(void) { return (pid_t)syscall(SYS_gettid); }

int tl_set_thread_slice(unsigned long long nanoseconds) {
    struct {
        unsigned int size, policy;
        unsigned long long flags;
        int nice;
        unsigned int priority;
        unsigned long long runtime, deadline, period;
        unsigned int util_min, util_max;
    } attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.policy = 0; /* SCHED_OTHER */
    attr.nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    attr.runtime = nanoseconds;
    return (int)syscall(SYS_sched_setattr, 0, &attr, 0);
}

void tl_set_thread_name(const char *name) { prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0); }

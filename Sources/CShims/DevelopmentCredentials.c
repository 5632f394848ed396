/* Throwaway credentials for local runs and tests, made in-process with OpenSSL: a P-256 signing
   key in the .p8 format Apple hands out, and a CA with a server certificate for localhost.
   Making them here rather than with the openssl command means no child process and no
   openssl binary on the host. */
#include "CShims.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

static int report(char *err, size_t len, const char *what) {
    unsigned long code = ERR_get_error();
    char reason[256] = "";
    if (code) ERR_error_string_n(code, reason, sizeof reason);
    snprintf(err, len, "%s%s%s", what, code ? ": " : "", reason);
    ERR_clear_error();
    return -1;
}

static int report_errno(char *err, size_t len, const char *path) {
    snprintf(err, len, "cannot write %s: %s", path, strerror(errno));
    return -1;
}

/* Private keys are created readable by the owner only. */
static FILE *open_for_writing(const char *path, int private_file) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, private_file ? 0600 : 0644);
    if (fd < 0) return NULL;
    FILE *file = fdopen(fd, "w");
    if (!file) close(fd);
    return file;
}

static int write_private_key(EVP_PKEY *key, const char *path, char *err, size_t len) {
    FILE *file = open_for_writing(path, 1);
    if (!file) return report_errno(err, len, path);
    /* PKCS#8 ("BEGIN PRIVATE KEY"), unencrypted. */
    int ok = PEM_write_PrivateKey(file, key, NULL, NULL, 0, NULL, NULL);
    if (fclose(file) != 0 || !ok) return ok ? report_errno(err, len, path) : report(err, len, "encoding the private key");
    return 0;
}

static int write_public_key(EVP_PKEY *key, const char *path, char *err, size_t len) {
    FILE *file = open_for_writing(path, 0);
    if (!file) return report_errno(err, len, path);
    int ok = PEM_write_PUBKEY(file, key);
    if (fclose(file) != 0 || !ok) return ok ? report_errno(err, len, path) : report(err, len, "encoding the public key");
    return 0;
}

static int write_certificate(X509 *certificate, const char *path, char *err, size_t len) {
    FILE *file = open_for_writing(path, 0);
    if (!file) return report_errno(err, len, path);
    int ok = PEM_write_X509(file, certificate);
    if (fclose(file) != 0 || !ok) return ok ? report_errno(err, len, path) : report(err, len, "encoding a certificate");
    return 0;
}

int tl_dev_write_p256_key(const char *private_path, const char *public_path, char *err, size_t len) {
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    if (!key) return report(err, len, "generating a P-256 key");
    int result = write_private_key(key, private_path, err, len);
    if (result == 0 && public_path) result = write_public_key(key, public_path, err, len);
    EVP_PKEY_free(key);
    return result;
}

/* A certificate for subject_key named cn, signed by issuer_key (self-signed when issuer is NULL),
   with the given extensions as NULL-terminated (nid, value) pairs. */
static X509 *make_certificate(EVP_PKEY *subject_key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key, int days,
                              const int *nids, const char *const *values) {
    X509 *certificate = X509_new();
    unsigned char serial[8];
    if (!certificate || RAND_bytes(serial, sizeof serial) != 1) { X509_free(certificate); return NULL; }
    serial[0] &= 0x7f; /* positive */
    BIGNUM *number = BN_bin2bn(serial, sizeof serial, NULL);
    int ok = number && BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate)) != NULL;
    BN_free(number);
    ok = ok && X509_set_version(certificate, 2)
        && X509_gmtime_adj(X509_getm_notBefore(certificate), -3600)
        && X509_gmtime_adj(X509_getm_notAfter(certificate), (long)days * 86400)
        && X509_set_pubkey(certificate, subject_key)
        && X509_NAME_add_entry_by_txt(X509_get_subject_name(certificate), "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0)
        && X509_set_issuer_name(certificate, X509_get_subject_name(issuer ? issuer : certificate));
    X509V3_CTX context;
    X509V3_set_ctx_nodb(&context);
    X509V3_set_ctx(&context, issuer ? issuer : certificate, certificate, NULL, NULL, 0);
    for (int i = 0; ok && nids[i] != NID_undef; i++) {
        X509_EXTENSION *extension = X509V3_EXT_nconf_nid(NULL, &context, nids[i], values[i]);
        ok = extension && X509_add_ext(certificate, extension, -1);
        X509_EXTENSION_free(extension);
    }
    if (!ok || !X509_sign(certificate, issuer_key, EVP_sha256())) {
        X509_free(certificate);
        return NULL;
    }
    return certificate;
}

int tl_dev_write_tls_files(const char *ca_certificate_path, const char *server_certificate_path, const char *server_key_path,
                           int days, char *err, size_t len) {
    static const int ca_nids[] = {NID_basic_constraints, NID_key_usage, NID_subject_key_identifier, NID_undef};
    static const char *const ca_values[] = {"critical,CA:TRUE", "critical,keyCertSign,cRLSign", "hash"};
    static const int server_nids[] = {NID_basic_constraints, NID_key_usage, NID_ext_key_usage, NID_subject_alt_name,
                                      NID_authority_key_identifier, NID_undef};
    static const char *const server_values[] = {"critical,CA:FALSE", "critical,digitalSignature,keyEncipherment", "serverAuth",
                                                "DNS:localhost,IP:127.0.0.1,IP:::1", "keyid"};
    int result = -1;
    X509 *ca = NULL, *server = NULL;
    EVP_PKEY *ca_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    EVP_PKEY *server_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    if (!ca_key || !server_key) {
        report(err, len, "generating a P-256 key");
        goto done;
    }
    ca = make_certificate(ca_key, "Touchline mock APNs development CA", NULL, ca_key, days, ca_nids, ca_values);
    if (!ca) { report(err, len, "making the CA certificate"); goto done; }
    server = make_certificate(server_key, "localhost", ca, ca_key, days, server_nids, server_values);
    if (!server) { report(err, len, "making the server certificate"); goto done; }
    if (write_certificate(ca, ca_certificate_path, err, len) == 0
        && write_certificate(server, server_certificate_path, err, len) == 0
        && write_private_key(server_key, server_key_path, err, len) == 0) {
        result = 0;
    }
done:
    X509_free(server);
    X509_free(ca);
    EVP_PKEY_free(server_key);
    EVP_PKEY_free(ca_key);
    return result;
}

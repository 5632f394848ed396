/* sys/types.h first: libevent's event-config.h defines _GNU_SOURCE, which would otherwise make
   sys/select.h differ between modules (fd_set clash). */
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <event2/event.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>
#include <event2/dns.h>
#include <event2/thread.h>
#include <event2/util.h>

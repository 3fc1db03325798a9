/* A do-nothing CONNECT relay, for comparison only (by hand, not CI; not part of the product).

   What any CONNECT proxy costs its client: one thread, epoll, a blocking connect to
   127.0.0.1:PORT of "CONNECT host:PORT", the egress proxy's 19-byte answer, then
   read/write. No policy, no log, no limits, no error handling worth the name: never
   run it where anything but a benchmark can reach it. docs/performance.md ("curl's CPU
   through the proxy") compares curl's CPU through it and through the egress proxy.

       gcc -O2 -o /tmp/connect_relay bench/connect_relay.c && /tmp/connect_relay
       (prints its port; then curl -x http://127.0.0.1:PORT --proxytunnel ...) */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#define MAXFD 65536
static int peer[MAXFD];
static int ep;
static void add(int fd) { struct epoll_event e = {.events = EPOLLIN, .data.fd = fd}; epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e); }
static void nodelay(int fd) { int one = 1; setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); }
int main(void) {
  int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  bind(l, (void *)&a, sizeof a); listen(l, 1024); getsockname(l, (void *)&a, &al);
  printf("%d\n", ntohs(a.sin_port)); fflush(stdout);
  ep = epoll_create1(0); add(l);
  memset(peer, -1, sizeof peer);
  static char buf[65536];
  struct epoll_event ev[256];
  for (;;) {
    int n = epoll_wait(ep, ev, 256, -1);
    for (int i = 0; i < n; i++) {
      int fd = ev[i].data.fd;
      if (fd == l) {
        int c = accept(l, 0, 0); if (c < 0) continue;
        nodelay(c); peer[c] = -2; add(c); continue;
      }
      ssize_t r = read(fd, buf, sizeof buf);
      if (peer[fd] == -2) { /* the CONNECT head, in one read */
        if (r <= 0) { close(fd); peer[fd] = -1; continue; }
        buf[r] = 0; char *colon = strchr(buf + 8, ':'); int port = colon ? atoi(colon + 1) : 0;
        int u = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (connect(u, (void *)&d, sizeof d) < 0) { close(u); close(fd); peer[fd] = -1; continue; }
        nodelay(u); peer[fd] = u; peer[u] = fd; add(u);
        write(fd, "HTTP/1.1 200 OK\r\n\r\n", 19);
        continue;
      }
      if (r <= 0) { int p = peer[fd]; close(fd); peer[fd] = -1; if (p >= 0) { close(p); peer[p] = -1; } continue; }
      for (ssize_t off = 0; off < r;) { ssize_t w = write(peer[fd], buf + off, r - off); if (w <= 0) break; off += w; }
    }
  }
}

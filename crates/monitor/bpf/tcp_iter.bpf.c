// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * tcpscope's BPF sampler: an iterator over the kernel's TCP sockets (`bpf_iter/tcp`, as the
 * kernel's selftests bpf_iter_tcp4.c / bpf_iter_tcp6.c do) that writes one fixed-size record per
 * socket with bpf_seq_write(): the `inet_diag_msg` values the netlink sampler keeps (cookie,
 * inode, uid, ends, state, queues), `INET_DIAG_MEMINFO`, the congestion control's name, and a
 * `struct tcp_info` in Linux 6.18's layout filled as tcp_get_info() fills it
 * (net/ipv4/tcp.c), so that user space decodes it with the netlink sampler's own decoder.
 *
 * The kernel's structures are declared here with only the members read, under
 * preserve_access_index: the loader relocates every access against the running kernel's BTF
 * (CO-RE), so no vmlinux.h is needed and the object does not depend on the machine that built it.
 * A kernel lacking a member read here (older than 6.18 for the AccECN counters) fails the load,
 * and tcpscope falls back to NETLINK_SOCK_DIAG.
 *
 * Rebuild with crates/monitor/bpf/build.sh (clang 14); a test checks the committed object is
 * what that command makes.
 */

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#define PAI __attribute__((preserve_access_index))

struct in6_addr {
	__u8 s6_addr[16];
} PAI;

struct sock_common {
	__be32 skc_daddr;
	__be32 skc_rcv_saddr;
	__be16 skc_dport;
	__u16 skc_num;
	unsigned short skc_family;
	volatile unsigned char skc_state;
	struct in6_addr skc_v6_daddr;
	struct in6_addr skc_v6_rcv_saddr;
} PAI;

struct inode {
	unsigned long i_ino;
} PAI;

struct socket {
	short type;
} PAI;

struct socket_alloc {
	struct socket socket;
	struct inode vfs_inode;
} PAI;

typedef struct {
	int counter;
} atomic_t;

typedef struct {
	atomic_t refs;
} refcount_t;

struct sock {
	struct sock_common __sk_common;
	struct {
		atomic_t rmem_alloc;
	} sk_backlog;
	struct socket *sk_socket;
	int sk_forward_alloc;
	int sk_wmem_queued;
	refcount_t sk_wmem_alloc;
	unsigned long sk_pacing_rate;
	unsigned long sk_max_pacing_rate;
} PAI;

struct tcp_congestion_ops {
	char name[16];
} PAI;

struct inet_connection_sock {
	__u32 icsk_rto;
	__u32 icsk_rto_min;
	__u32 icsk_delack_max;
	__u32 icsk_pmtu_cookie;
	const struct tcp_congestion_ops *icsk_ca_ops;
	__u8 icsk_ca_state : 5;
	__u8 icsk_retransmits;
	__u8 icsk_backoff;
	__u8 icsk_probes_out;
	struct {
		__u32 ato : 8;
		__u32 lrcvtime;
		__u16 rcv_mss;
	} icsk_ack;
} PAI;

struct tcp_options_received {
	__u16 tstamp_ok : 1;
	__u16 wscale_ok : 1;
	__u16 sack_ok : 3;
	__u16 snd_wscale : 4;
	__u16 rcv_wscale : 4;
} PAI;

struct minmax_sample {
	__u32 t;
	__u32 v;
} PAI;

struct minmax {
	struct minmax_sample s[3];
} PAI;

struct tcp_sock {
	__u32 rcv_ssthresh;
	__u32 reordering;
	__u32 snd_wnd;
	__u32 mss_cache;
	__u32 snd_cwnd;
	__u32 lost_out;
	__u32 sacked_out;
	__u8 tcp_usec_ts : 1;
	__u32 copied_seq;
	__u32 retrans_out;
	__u16 advmss;
	__u32 snd_ssthresh;
	struct minmax rtt_min;
	__u32 segs_out;
	__u32 data_segs_out;
	__u64 bytes_sent;
	__u8 chrono_type;
	__u32 chrono_start;
	__u32 chrono_stat[3];
	__u32 write_seq;
	__u32 lsndtime;
	__u32 mdev_us;
	__u8 ecn_flags;
	__u8 rate_app_limited : 1;
	__u32 rcv_nxt;
	__u32 snd_nxt;
	__u32 snd_una;
	__u32 srtt_us;
	__u32 packets_out;
	__u32 delivered;
	__u32 delivered_ce;
	__u32 received_ce;
	__u32 received_ecn_bytes[3];
	__u32 rcv_wnd;
	__u32 rcv_tstamp;
	struct tcp_options_received rx_opt;
	__u64 bytes_received;
	__u32 segs_in;
	__u32 data_segs_in;
	__u32 rate_delivered;
	__u32 rate_interval_us;
	__u32 delivered_ecn_bytes[3];
	__u64 bytes_acked;
	struct {
		__u32 rtt_us;
	} rcv_rtt_est;
	struct {
		int space;
	} rcvq_space;
	__u32 dsack_dups;
	__u8 fastopen_client_fail : 2;
	__u8 syn_data_acked : 1;
	__u8 syn_fastopen_child : 1;
	__u8 accecn_fail_mode : 4;
	__u8 saw_accecn_opt : 2;
	__u32 reord_seen;
	__u64 bytes_retrans;
	__u32 total_retrans;
	__u32 rto_stamp;
	__u16 total_rto;
	__u16 total_rto_recoveries;
	__u32 total_rto_time;
	__u16 timeout_rehash;
	__u32 rcv_ooopack;
	__u32 plb_rehash;
} PAI;

struct seq_file;
struct bpf_iter_meta {
	struct seq_file *seq;
} PAI;

struct bpf_iter__tcp {
	struct bpf_iter_meta *meta;
	struct sock_common *sk_common;
	__u32 uid;
} PAI;

/* struct tcp_info as Linux 6.18 lays it out (include/uapi/linux/tcp.h), 280 bytes. */
struct tcp_info {
	__u8 tcpi_state;
	__u8 tcpi_ca_state;
	__u8 tcpi_retransmits;
	__u8 tcpi_probes;
	__u8 tcpi_backoff;
	__u8 tcpi_options;
	__u8 tcpi_wscale;		/* snd_wscale : 4, rcv_wscale : 4 */
	__u8 tcpi_flags7;		/* delivery_rate_app_limited : 1, fastopen_client_fail : 2 */
	__u32 tcpi_rto;
	__u32 tcpi_ato;
	__u32 tcpi_snd_mss;
	__u32 tcpi_rcv_mss;
	__u32 tcpi_unacked;
	__u32 tcpi_sacked;
	__u32 tcpi_lost;
	__u32 tcpi_retrans;
	__u32 tcpi_fackets;
	__u32 tcpi_last_data_sent;
	__u32 tcpi_last_ack_sent;
	__u32 tcpi_last_data_recv;
	__u32 tcpi_last_ack_recv;
	__u32 tcpi_pmtu;
	__u32 tcpi_rcv_ssthresh;
	__u32 tcpi_rtt;
	__u32 tcpi_rttvar;
	__u32 tcpi_snd_ssthresh;
	__u32 tcpi_snd_cwnd;
	__u32 tcpi_advmss;
	__u32 tcpi_reordering;
	__u32 tcpi_rcv_rtt;
	__u32 tcpi_rcv_space;
	__u32 tcpi_total_retrans;
	__u64 tcpi_pacing_rate;
	__u64 tcpi_max_pacing_rate;
	__u64 tcpi_bytes_acked;
	__u64 tcpi_bytes_received;
	__u32 tcpi_segs_out;
	__u32 tcpi_segs_in;
	__u32 tcpi_notsent_bytes;
	__u32 tcpi_min_rtt;
	__u32 tcpi_data_segs_in;
	__u32 tcpi_data_segs_out;
	__u64 tcpi_delivery_rate;
	__u64 tcpi_busy_time;
	__u64 tcpi_rwnd_limited;
	__u64 tcpi_sndbuf_limited;
	__u32 tcpi_delivered;
	__u32 tcpi_delivered_ce;
	__u64 tcpi_bytes_sent;
	__u64 tcpi_bytes_retrans;
	__u32 tcpi_dsack_dups;
	__u32 tcpi_reord_seen;
	__u32 tcpi_rcv_ooopack;
	__u32 tcpi_snd_wnd;
	__u32 tcpi_rcv_wnd;
	__u32 tcpi_rehash;
	__u16 tcpi_total_rto;
	__u16 tcpi_total_rto_recoveries;
	__u32 tcpi_total_rto_time;
	__u32 tcpi_received_ce;
	__u32 tcpi_delivered_e1_bytes;
	__u32 tcpi_delivered_e0_bytes;
	__u32 tcpi_delivered_ce_bytes;
	__u32 tcpi_received_e1_bytes;
	__u32 tcpi_received_e0_bytes;
	__u32 tcpi_received_ce_bytes;
	__u16 tcpi_ecn_bits;		/* ecn_mode : 2, accecn_opt_seen : 2, accecn_fail_mode : 4 */
	__u16 tcpi_pad;
};

_Static_assert(sizeof(struct tcp_info) == 280, "tcp_info of Linux 6.18 is 280 bytes");
_Static_assert(__builtin_offsetof(struct tcp_info, tcpi_pacing_rate) == 104, "tcp_info layout");
_Static_assert(__builtin_offsetof(struct tcp_info, tcpi_busy_time) == 168, "tcp_info layout");
_Static_assert(__builtin_offsetof(struct tcp_info, tcpi_total_rto) == 240, "tcp_info layout");
_Static_assert(__builtin_offsetof(struct tcp_info, tcpi_ecn_bits) == 276, "tcp_info layout");

/* One record per socket; the layout is read by crates/monitor/src/bpf.rs (REC_* there). */
struct rec {
	__u16 len;		/* sizeof(struct rec): a check that both sides agree */
	__u16 family;		/* AF_INET or AF_INET6 */
	__u8 state;
	__u8 pad0[3];
	__u64 cookie;
	__u32 inode;
	__u32 uid;
	__u16 sport;		/* host order */
	__u16 dport;		/* host order */
	__u32 rqueue;
	__u32 wqueue;
	__u32 mem[4];		/* idiag_rmem, idiag_wmem, idiag_fmem, idiag_tmem */
	__u8 src[16];		/* IPv4: the first 4 bytes */
	__u8 dst[16];
	char cong[16];		/* NUL-terminated */
	__u32 pad1;
	struct tcp_info info;
};

_Static_assert(sizeof(struct rec) == 384, "record layout");
_Static_assert(__builtin_offsetof(struct rec, info) == 104, "record layout");

/* Set by user space before loading: how many µs and ms one jiffy is (the kernel's HZ divides
 * 1000; user space refuses other HZ and uses the netlink sampler). */
const volatile __u32 us_per_jiffy = 4000;
const volatile __u32 ms_per_jiffy = 4;

/* A per-CPU scratch record: 384 bytes do not fit the BPF stack beside the rest. */
struct {
	__uint(type, 6);	/* BPF_MAP_TYPE_PERCPU_ARRAY */
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rec);
} scratch SEC(".maps");

#define AF_INET 2
#define AF_INET6 10
#define TCP_SYN_RECV 3
#define TCP_LISTEN 10
#define TCP_ECN_MODE_RFC3168 1
#define TCP_ECN_SEEN 8
#define TCP_ECN_MODE_ACCECN 16
#define TCP_ECN_MODE_ANY (TCP_ECN_MODE_RFC3168 | TCP_ECN_MODE_ACCECN)

static __always_inline __u16 bswap16(__u16 x)
{
	return (__u16)((x >> 8) | (x << 8));
}

SEC("iter/tcp")
int tcpscope_tcp(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct seq_file *seq = ctx->meta->seq;
	__u32 zero = 0;

	if (!skc)
		return 0;
	/* Full TCP sockets only (not request or TIME_WAIT minisocks), as the netlink sampler
	 * asks: every state but LISTEN, SYN_RECV and TIME_WAIT. */
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(skc);
	if (!tp)
		return 0;
	struct sock *sk = (struct sock *)tp;
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)tp;
	__u8 state = skc->skc_state;
	if (state == TCP_LISTEN || state == TCP_SYN_RECV)
		return 0;
	struct rec *r = bpf_map_lookup_elem(&scratch, &zero);
	if (!r)
		return 0;
	__builtin_memset(r, 0, sizeof(*r));
	struct tcp_info *i = &r->info;

	r->len = sizeof(*r);
	r->family = skc->skc_family;
	r->state = state;
	r->cookie = bpf_get_socket_cookie(tp);
	r->uid = ctx->uid;
	/* sock_i_ino(), as the selftests read it. */
	struct socket *so = sk->sk_socket;
	if (so) {
		unsigned long ino = 0;
		struct socket_alloc *sa = (void *)so;
		bpf_probe_read_kernel(&ino, sizeof(ino), &sa->vfs_inode.i_ino);
		r->inode = ino;
	}
	r->sport = skc->skc_num;
	r->dport = bswap16(skc->skc_dport);
	if (r->family == AF_INET) {
		__builtin_memcpy(r->src, (const void *)&skc->skc_rcv_saddr, 4);
		__builtin_memcpy(r->dst, (const void *)&skc->skc_daddr, 4);
	} else {
		bpf_probe_read_kernel(r->src, 16, &skc->skc_v6_rcv_saddr);
		bpf_probe_read_kernel(r->dst, 16, &skc->skc_v6_daddr);
	}
	/* tcp_diag_get_info() */
	int rq = (int)(tp->rcv_nxt - tp->copied_seq);
	r->rqueue = rq > 0 ? rq : 0;
	r->wqueue = tp->write_seq - tp->snd_una;
	/* inet_diag_meminfo: sk_rmem_alloc_get, sk_wmem_queued, sk_forward_alloc,
	 * sk_wmem_alloc_get (refcount - 1). */
	r->mem[0] = sk->sk_backlog.rmem_alloc.counter;
	r->mem[1] = sk->sk_wmem_queued;
	r->mem[2] = sk->sk_forward_alloc;
	r->mem[3] = sk->sk_wmem_alloc.refs.counter - 1;
	const struct tcp_congestion_ops *ops = icsk->icsk_ca_ops;
	if (ops)
		bpf_probe_read_kernel_str(r->cong, sizeof(r->cong), &ops->name);

	/* tcp_get_info(), in its order. */
	__u64 now = bpf_jiffies64();
	__u32 now32 = (__u32)now;
	unsigned long rate;
	i->tcpi_state = state;
	rate = sk->sk_pacing_rate;
	i->tcpi_pacing_rate = rate;
	rate = sk->sk_max_pacing_rate;
	i->tcpi_max_pacing_rate = rate;
	i->tcpi_reordering = tp->reordering;
	i->tcpi_snd_cwnd = tp->snd_cwnd;

	i->tcpi_ca_state = BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);
	i->tcpi_retransmits = icsk->icsk_retransmits;
	i->tcpi_probes = icsk->icsk_probes_out;
	i->tcpi_backoff = icsk->icsk_backoff;

	/* Bit fields of nested structures are read through a pointer the compiler cannot see
	 * through: else it roots the bit field's relocation at tcp_sock and the nested offset
	 * counts twice. */
	struct tcp_options_received *ro = &tp->rx_opt;
	barrier_var(ro);
	__u8 opt = 0;
	if (BPF_CORE_READ_BITFIELD(ro, tstamp_ok))
		opt |= 1;		/* TCPI_OPT_TIMESTAMPS */
	if (BPF_CORE_READ_BITFIELD(ro, sack_ok))
		opt |= 2;		/* TCPI_OPT_SACK */
	if (BPF_CORE_READ_BITFIELD(ro, wscale_ok)) {
		opt |= 4;		/* TCPI_OPT_WSCALE */
		i->tcpi_wscale = (__u8)(BPF_CORE_READ_BITFIELD(ro, snd_wscale) & 15) |
				 (__u8)((BPF_CORE_READ_BITFIELD(ro, rcv_wscale) & 15) << 4);
	}
	__u8 ecn = tp->ecn_flags;
	if (ecn & TCP_ECN_MODE_ANY)
		opt |= 8;		/* TCPI_OPT_ECN */
	if (ecn & TCP_ECN_SEEN)
		opt |= 16;		/* TCPI_OPT_ECN_SEEN */
	if (BPF_CORE_READ_BITFIELD(tp, syn_data_acked))
		opt |= 32;		/* TCPI_OPT_SYN_DATA */
	if (BPF_CORE_READ_BITFIELD(tp, tcp_usec_ts))
		opt |= 64;		/* TCPI_OPT_USEC_TS */
	if (BPF_CORE_READ_BITFIELD(tp, syn_fastopen_child))
		opt |= 128;		/* TCPI_OPT_TFO_CHILD */
	i->tcpi_options = opt;

	i->tcpi_rto = us_per_jiffy * icsk->icsk_rto;
	/* tcp_delack_max(): min(icsk_delack_max, max(tcp_rto_min, 2) - 1), without the route's
	 * locked rto_min metric (not readable here). */
	__u32 rto_min = icsk->icsk_rto_min;
	__u32 delack = icsk->icsk_delack_max;
	__u32 from_rto_min = (rto_min > 2 ? rto_min : 2) - 1;
	if (from_rto_min < delack)
		delack = from_rto_min;
	typeof(icsk->icsk_ack) *ack = &icsk->icsk_ack;
	barrier_var(ack);
	__u32 ato = BPF_CORE_READ_BITFIELD(ack, ato);
	i->tcpi_ato = us_per_jiffy * (ato < delack ? ato : delack);
	i->tcpi_snd_mss = tp->mss_cache;
	i->tcpi_rcv_mss = icsk->icsk_ack.rcv_mss;

	i->tcpi_unacked = tp->packets_out;
	i->tcpi_sacked = tp->sacked_out;
	i->tcpi_lost = tp->lost_out;
	i->tcpi_retrans = tp->retrans_out;

	i->tcpi_last_data_sent = ms_per_jiffy * (now32 - tp->lsndtime);
	i->tcpi_last_data_recv = ms_per_jiffy * (now32 - icsk->icsk_ack.lrcvtime);
	i->tcpi_last_ack_recv = ms_per_jiffy * (now32 - tp->rcv_tstamp);

	i->tcpi_pmtu = icsk->icsk_pmtu_cookie;
	i->tcpi_rcv_ssthresh = tp->rcv_ssthresh;
	i->tcpi_rtt = tp->srtt_us >> 3;
	i->tcpi_rttvar = tp->mdev_us >> 2;
	i->tcpi_snd_ssthresh = tp->snd_ssthresh;
	i->tcpi_advmss = tp->advmss;

	i->tcpi_rcv_rtt = tp->rcv_rtt_est.rtt_us >> 3;
	i->tcpi_rcv_space = tp->rcvq_space.space;
	i->tcpi_total_retrans = tp->total_retrans;

	i->tcpi_bytes_acked = tp->bytes_acked;
	i->tcpi_bytes_received = tp->bytes_received;
	int notsent = (int)(tp->write_seq - tp->snd_nxt);
	i->tcpi_notsent_bytes = notsent > 0 ? notsent : 0;

	/* tcp_get_info_chrono_stats(): TCP_CHRONO_BUSY 1, RWND_LIMITED 2, SNDBUF_LIMITED 3. */
	__u8 ct = tp->chrono_type;
	__u64 busy = tp->chrono_stat[0], rwnd = tp->chrono_stat[1], sndbuf = tp->chrono_stat[2];
	__u32 running = now32 - tp->chrono_start;
	if (ct == 1)
		busy += running;
	else if (ct == 2)
		rwnd += running;
	else if (ct == 3)
		sndbuf += running;
	busy *= us_per_jiffy;
	rwnd *= us_per_jiffy;
	sndbuf *= us_per_jiffy;
	i->tcpi_busy_time = busy + rwnd + sndbuf;
	i->tcpi_rwnd_limited = rwnd;
	i->tcpi_sndbuf_limited = sndbuf;

	i->tcpi_segs_out = tp->segs_out;
	i->tcpi_segs_in = tp->segs_in;
	i->tcpi_data_segs_in = tp->data_segs_in;
	i->tcpi_min_rtt = tp->rtt_min.s[0].v;
	i->tcpi_data_segs_out = tp->data_segs_out;

	__u8 flags7 = BPF_CORE_READ_BITFIELD(tp, rate_app_limited) ? 1 : 0;
	/* tcp_compute_delivery_rate() */
	__u32 drate = tp->rate_delivered, intv = tp->rate_interval_us;
	if (drate && intv)
		i->tcpi_delivery_rate = (__u64)drate * tp->mss_cache * 1000000 / intv;
	i->tcpi_delivered = tp->delivered;
	i->tcpi_delivered_ce = tp->delivered_ce;
	i->tcpi_bytes_sent = tp->bytes_sent;
	i->tcpi_bytes_retrans = tp->bytes_retrans;
	i->tcpi_dsack_dups = tp->dsack_dups;
	i->tcpi_reord_seen = tp->reord_seen;
	i->tcpi_rcv_ooopack = tp->rcv_ooopack;
	i->tcpi_snd_wnd = tp->snd_wnd;
	i->tcpi_rcv_wnd = tp->rcv_wnd;
	i->tcpi_rehash = tp->plb_rehash + tp->timeout_rehash;
	flags7 |= (BPF_CORE_READ_BITFIELD(tp, fastopen_client_fail) & 3) << 1;
	i->tcpi_flags7 = flags7;

	i->tcpi_total_rto = tp->total_rto;
	i->tcpi_total_rto_recoveries = tp->total_rto_recoveries;
	__u32 rto_time = tp->total_rto_time;
	__u32 rto_stamp = tp->rto_stamp;
	if (rto_stamp)
		rto_time += (__u32)(bpf_ktime_get_ns() / 1000000) - rto_stamp;	/* tcp_clock_ms() */
	i->tcpi_total_rto_time = rto_time;

	i->tcpi_ecn_bits = (__u16)((BPF_CORE_READ_BITFIELD(tp, saw_accecn_opt) & 3) << 2) |
			   (__u16)((BPF_CORE_READ_BITFIELD(tp, accecn_fail_mode) & 15) << 4);
	i->tcpi_received_ce = tp->received_ce;
	/* INET_ECN_ECT_1 - 1 = 0, INET_ECN_ECT_0 - 1 = 1, INET_ECN_CE - 1 = 2 */
	i->tcpi_delivered_e1_bytes = tp->delivered_ecn_bytes[0];
	i->tcpi_delivered_e0_bytes = tp->delivered_ecn_bytes[1];
	i->tcpi_delivered_ce_bytes = tp->delivered_ecn_bytes[2];
	i->tcpi_received_e1_bytes = tp->received_ecn_bytes[0];
	i->tcpi_received_e0_bytes = tp->received_ecn_bytes[1];
	i->tcpi_received_ce_bytes = tp->received_ecn_bytes[2];

	bpf_seq_write(seq, r, sizeof(*r));
	return 0;
}

/* The iterator's own cost, for the benchmark (`make bench-monitor`): the same walk over the
 * sockets, each locked and handed to a program that does nothing. */
SEC("iter/tcp")
int tcpscope_tcp_walk(struct bpf_iter__tcp *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

package workload

import "strings"

// reqRespFloor is the floor of a request-response workload's metrics
// (periodic's) with deadline period (0: no deadline metric). A response
// is whole at the client only after the request's last frame crossed
// client → server and the response's last frame server → client, each
// after the one before it (the server answers what it received); the
// client's clock reads sent before the request's first byte leaves and
// done after the response's last byte arrives. So every completed
// request's delay, done − sent, is at least rtt = oneWay(client, server)
// + oneWay(server, client), and:
//
//   - delay_pNN_ms, a type-7 percentile of the completed delays with the
//     requests that never completed counted beyond any bound: every value
//     it interpolates between is ≥ rtt, so it is ≥ rtt; delay_mean_ms,
//     the mean of the completed delays, is ≥ rtt (NaN without any, which
//     a judgement leaves out); sched_delay_pNN_ms, the same of done −
//     scheduled, is no less (scheduled ≤ sent, below).
//   - deadline_miss_pct counts a request missed when it never completed
//     or when done − scheduled > period (metrics.DeadlineMissPct, a
//     strict ">"). The schedule sleeps until a request is due before
//     sending it (an absolute clock_nanosleep never wakes early), so
//     scheduled ≤ sent and done − scheduled ≥ done − sent ≥ rtt. Where
//     rtt > period, strictly, every request misses: the share is 100 %.
//     At rtt = period a response could arrive exactly on time and not
//     miss, so the floor is the trivial 0 there, and below.
//
// The rtt includes one least frame's serialisation per crossing at the
// link's rate (emu.MinDataFrame), which is what separates a 25 ms RTT
// from a 25 ms period. The least time the sender's own stack takes is not
// counted (it only adds).
func reqRespFloor(period float64) func(string, OneWay) (float64, bool) {
	return func(metric string, oneWay OneWay) (float64, bool) {
		rtt, ok := oneWay.path(ClientServerRoles[0], ClientServerRoles[1], ClientServerRoles[0])
		if !ok {
			return 0, false
		}
		rttMs := ms(rtt)
		switch {
		case metric == "deadline_miss_pct" && period > 0:
			if rttMs > period {
				return 100, true
			}
			return 0, true
		case metric == "delay_mean_ms", (strings.HasPrefix(metric, "delay_p") || strings.HasPrefix(metric, "sched_delay_p")) && strings.HasSuffix(metric, "_ms") && !strings.Contains(metric, "_ci_"):
			return rttMs, true
		}
		return 0, false
	}
}

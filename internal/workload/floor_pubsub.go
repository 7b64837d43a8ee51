package workload

import "strings"

// pubsubFloor is the floor of the pubsub workload's message latencies. A
// message's latency runs from the publisher's PUBLISH call to the
// subscriber's receipt, both on tlab's one monotonic clock; in between,
// the message's last frame crosses publisher → broker, and the broker
// relays it only after it has it, so its last frame then crosses broker →
// subscriber: every delivered message's latency is at least
// oneWay(publisher, broker) + oneWay(broker, subscriber), whatever the
// pattern (a reconnecting publisher's set-up only adds to it) and the
// QoS (acknowledgements come after the delivery or beside it).
// message_latency_pNN_ms counts a message that never arrived as beyond
// any bound, so every value it interpolates between is at least the
// floor; message_latency_mean_ms is over delivered messages. The study D
// topology is a chain publisher – broker – subscriber, each link with the
// cell's profile: the floor is then one RTT of the profile's delays (less
// jitter's reach, plus two least frames' serialisation).
func pubsubFloor(metric string, oneWay OneWay) (float64, bool) {
	if !strings.HasPrefix(metric, "message_latency_") || !strings.HasSuffix(metric, "_ms") {
		return 0, false
	}
	d, ok := oneWay.path(PubSubRoles...)
	if !ok {
		return 0, false
	}
	return ms(d), true
}

package node

import "time"

// ProgressTimes are the waits a cluster's progress is built from: the
// pieces a judge of liveness adds up to bound how long a failover or a
// replacement may take. They come from the configuration and the node's
// own constants, so a bound built from them moves when either does.
type ProgressTimes struct {
	// Election is the longest a follower that hears from no leader waits
	// before it campaigns: a full election window plus its jitter.
	Election time.Duration
	// ElectionRetry is the longest a candidate whose vote split waits
	// before it campaigns again.
	ElectionRetry time.Duration
	// ProposalTimeout is how long a lifecycle proposal (an owner claiming
	// its epoch, a plan) waits for the leader before it counts as failed;
	// LifecycleRetry is the period of the reconcile that retries it and
	// of the leader's failover and replacement planning.
	ProposalTimeout time.Duration
	LifecycleRetry  time.Duration
	// ReplaceAfter is how long a replica stays confirmed down before the
	// leader replaces it.
	ReplaceAfter time.Duration
	// CertifyResend is how long an owner waits for checkpoint receipts
	// before asking again, and CertifyGiveUp how long before it abandons
	// the cut and, on a later tick, tries a new one.
	CertifyResend, CertifyGiveUp time.Duration
}

// ProgressTimes returns the waits for this configuration.
func (c Config) ProgressTimes() ProgressTimes {
	c.fill()
	return ProgressTimes{
		Election:        time.Duration(2*metaElectionTicks-1) * c.MetaTick,
		ElectionRetry:   time.Duration(metaElectionTicks/3+metaElectionTicks-1) * c.MetaTick,
		ProposalTimeout: time.Duration(lifecycleTimeoutTicks) * c.MetaTick,
		LifecycleRetry:  time.Duration(lifecycleRetryTicks) * c.MetaTick,
		ReplaceAfter:    c.ReplaceAfter,
		CertifyResend:   time.Duration(certifyResendTicks) * c.Tick,
		CertifyGiveUp:   time.Duration(certifyGiveUpTicks) * c.Tick,
	}
}

// Silence is the longest the metadata leader takes to confirm a silent
// peer down under the policy, counted in whole detector ticks. Both modes
// time the silence by the first ping the peer leaves unanswered, which
// may go out up to a ping period after the silence began (a quarter
// interval under heartbeat detection, half an interval under eager). A
// heartbeat then waits the grace, at least an interval, the verification
// included (heartbeatVerifyAfter); eager detection waits up to three intervals
// when the peer's link stalled lately (idleLimit), then a verification.
// A tick more each covers the rounding of the interval and grace to
// ticks.
func (p DetectionPolicy) Silence() time.Duration {
	if p.Mode == DetectEager {
		return 3*p.Interval + p.Interval/2 + time.Duration(verifyTicks+1)*detectTick
	}
	return p.Interval/4 + max(p.Interval, p.Grace, time.Duration(verifyTicks+1)*detectTick) + 3*detectTick
}

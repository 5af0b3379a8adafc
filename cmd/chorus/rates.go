package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-redis/redis_rate/v10"
)

// rateValue is a flag holding a rate limit, written "N/PERIOD" with an
// optional ",burst=B": "300/3h,burst=10" lets 10 through at once and then
// one every 36 s (300 per 3 hours). PERIOD is a Go duration or a bare unit
// ("s", "m", "h"); the burst defaults to N. "off" (or "0") is no limit.
type rateValue struct{ l *redis_rate.Limit }

func (v rateValue) String() string {
	if v.l == nil || v.l.IsZero() {
		return "off"
	}
	return formatRate(*v.l)
}

func (v rateValue) Set(s string) error {
	l, err := parseRate(s)
	if err != nil {
		return err
	}
	*v.l = l
	return nil
}

func formatRate(l redis_rate.Limit) string {
	period := l.Period.String()
	switch {
	case l.Period%time.Hour == 0:
		period = strconv.Itoa(int(l.Period/time.Hour)) + "h"
	case l.Period%time.Minute == 0:
		period = strconv.Itoa(int(l.Period/time.Minute)) + "m"
	}
	if l.Burst == l.Rate {
		return fmt.Sprintf("%d/%s", l.Rate, period)
	}
	return fmt.Sprintf("%d/%s,burst=%d", l.Rate, period, l.Burst)
}

func parseRate(s string) (redis_rate.Limit, error) {
	s = strings.TrimSpace(s)
	if s == "off" || s == "0" {
		return redis_rate.Limit{}, nil
	}
	bad := fmt.Errorf("rate %q: want N/PERIOD[,burst=B], e.g. 300/3h,burst=10, or off", s)
	spec, burstSpec, hasBurst := strings.Cut(s, ",")
	n, per, ok := strings.Cut(spec, "/")
	if !ok {
		return redis_rate.Limit{}, bad
	}
	rate, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || rate <= 0 {
		return redis_rate.Limit{}, bad
	}
	per = strings.TrimSpace(per)
	if per == "s" || per == "m" || per == "h" {
		per = "1" + per
	}
	period, err := time.ParseDuration(per)
	if err != nil || period <= 0 {
		return redis_rate.Limit{}, bad
	}
	// Windows are kept in Redis in milliseconds: a shorter one would be
	// kept as 0, which expires its count at once and so turns the
	// limit off.
	if period < time.Millisecond {
		return redis_rate.Limit{}, fmt.Errorf("rate %q: the period must be at least 1ms", s)
	}
	burst := rate
	if hasBurst {
		b, ok := strings.CutPrefix(strings.TrimSpace(burstSpec), "burst=")
		if !ok {
			return redis_rate.Limit{}, bad
		}
		if burst, err = strconv.Atoi(b); err != nil || burst <= 0 {
			return redis_rate.Limit{}, bad
		}
	}
	return redis_rate.Limit{Rate: rate, Period: period, Burst: burst}, nil
}

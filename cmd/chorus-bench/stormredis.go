package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// StormRedis is what a storm cost the deployment's Redis (-redis-url), from
// the kill until every mover was back (or had failed): the time its
// commands ran (INFO commandstats, summed: a script with all it runs) and
// its CPU (INFO cpu, used_cpu_user + used_cpu_sys: commands, reading and
// answering). The idle rate, measured over the hold before the kill (the
// streams' heartbeats and the sweepers), is taken off to give the cost of
// the reconnects alone.
type StormRedis struct {
	Seconds         float64 `json:"seconds"` // kill → all back
	IdleSeconds     float64 `json:"idle_seconds"`
	Calls           int64   `json:"calls"`
	CommandsUS      float64 `json:"commands_us"`
	CPUUS           float64 `json:"cpu_us"`
	IdleCommandsUSs float64 `json:"idle_commands_us_per_s"`
	IdleCPUUSs      float64 `json:"idle_cpu_us_per_s"`
	// Per mover back, less the idle rate over Seconds.
	CommandsPerMoverUS float64 `json:"commands_per_mover_us"`
	CPUPerMoverUS      float64 `json:"cpu_per_mover_us"`
	CallsPerMover      float64 `json:"calls_per_mover"`
}

// redisWork is Redis's own tally of its work at one moment.
type redisWork struct {
	at         time.Time
	calls      int64
	commandsUS float64 // usec summed over INFO commandstats
	cpuUS      float64 // used_cpu_user + used_cpu_sys, in µs
}

// readRedisWork reads INFO commandstats and cpu; ok is false when Redis did
// not tell.
func readRedisWork(ctx context.Context, rdb *redis.Client) (redisWork, bool) {
	w := redisWork{at: time.Now()}
	info, err := rdb.Info(ctx, "commandstats", "cpu").Result()
	if err != nil {
		return w, false
	}
	cpuFields := 0
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch {
		case k == "used_cpu_user" || k == "used_cpu_sys":
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return w, false
			}
			w.cpuUS += x * 1e6
			cpuFields++
		case strings.HasPrefix(k, "cmdstat_"):
			// calls=N,usec=N,usec_per_call=N.NN,...
			for _, f := range strings.Split(v, ",") {
				name, val, _ := strings.Cut(f, "=")
				switch name {
				case "calls":
					n, _ := strconv.ParseInt(val, 10, 64)
					w.calls += n
				case "usec":
					n, _ := strconv.ParseFloat(val, 64)
					w.commandsUS += n
				}
			}
		}
	}
	return w, cpuFields == 2
}

// stormRedis sums up a storm's Redis work: idle from holdStart to kill, the
// storm from kill to back, over movers back.
func stormRedis(holdStart, kill, back redisWork, movers int) *StormRedis {
	s := &StormRedis{
		Seconds:     back.at.Sub(kill.at).Seconds(),
		IdleSeconds: kill.at.Sub(holdStart.at).Seconds(),
		Calls:       back.calls - kill.calls,
		CommandsUS:  back.commandsUS - kill.commandsUS,
		CPUUS:       back.cpuUS - kill.cpuUS,
	}
	if s.IdleSeconds > 0 {
		s.IdleCommandsUSs = (kill.commandsUS - holdStart.commandsUS) / s.IdleSeconds
		s.IdleCPUUSs = (kill.cpuUS - holdStart.cpuUS) / s.IdleSeconds
	}
	if movers > 0 {
		s.CommandsPerMoverUS = (s.CommandsUS - s.IdleCommandsUSs*s.Seconds) / float64(movers)
		s.CPUPerMoverUS = (s.CPUUS - s.IdleCPUUSs*s.Seconds) / float64(movers)
		s.CallsPerMover = float64(s.Calls) / float64(movers)
	}
	return s
}

// String is the figures in one line.
func (s *StormRedis) String() string {
	return fmt.Sprintf("%.0f µs of commands and %.0f µs of CPU per mover back, less idle (%.0f and %.0f µs/s over %.1fs held); "+
		"%.1f commands per mover; %.1fs from the kill to all back: %.0f ms of commands, %.0f ms of CPU in all",
		s.CommandsPerMoverUS, s.CPUPerMoverUS, s.IdleCommandsUSs, s.IdleCPUUSs, s.IdleSeconds,
		s.CallsPerMover, s.Seconds, s.CommandsUS/1e3, s.CPUUS/1e3)
}

package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// StormRedis is what a storm cost the deployment's Redis (-redis-url), from
// the kill until every mover was back (or had failed): the CPU time of
// Redis's main thread (INFO cpu, used_cpu_user_main_thread +
// used_cpu_sys_main_thread: the commands, reading them and answering), the
// time of the whole process beside it, and the commands it counted (INFO
// commandstats). The idle rate, measured over the hold before the kill (the
// streams' heartbeats and the sweepers), is taken off to give the cost of
// the reconnects alone.
//
// Commandstats counts a script's call and, apart, each command the script
// runs, and a script's time includes its commands': summing the times
// counts a script's commands twice, so the figure of "Redis time" is the
// main thread's CPU. The count of calls (scripts and their commands) and
// the top commands by calls per mover say what the time went on.
type StormRedis struct {
	Seconds     float64 `json:"seconds"` // kill → all back
	IdleSeconds float64 `json:"idle_seconds"`
	Calls       int64   `json:"calls"`
	MainCPUUS   float64 `json:"main_cpu_us"`
	CPUUS       float64 `json:"cpu_us"`
	IdleMainUSs float64 `json:"idle_main_cpu_us_per_s"`
	IdleCPUUSs  float64 `json:"idle_cpu_us_per_s"`
	// Per mover back, less the idle rate over Seconds.
	MainCPUPerMoverUS float64 `json:"main_cpu_per_mover_us"`
	CPUPerMoverUS     float64 `json:"cpu_per_mover_us"`
	CallsPerMover     float64 `json:"calls_per_mover"`
	// Commands are the commands counted from the kill to all back, by
	// calls, most first, idle included.
	Commands []CommandCalls `json:"commands"`
}

// CommandCalls is one command's share of a storm: its calls, and the time
// commandstats gives it (a script's includes the commands it ran, which
// are counted apart too).
type CommandCalls struct {
	Name       string  `json:"name"`
	Calls      int64   `json:"calls"`
	US         float64 `json:"us"`
	PerMover   float64 `json:"per_mover"`
	USPerMover float64 `json:"us_per_mover"`
}

// redisWork is Redis's own tally of its work at one moment.
type redisWork struct {
	at        time.Time
	calls     map[string]int64   // by command, from commandstats
	usec      map[string]float64 // likewise
	mainCPUUS float64            // used_cpu_{user,sys}_main_thread, in µs
	cpuUS     float64            // used_cpu_{user,sys}, in µs
}

// readRedisWork reads INFO commandstats and cpu; ok is false when Redis did
// not tell.
func readRedisWork(ctx context.Context, rdb *redis.Client) (redisWork, bool) {
	w := redisWork{at: time.Now(), calls: map[string]int64{}, usec: map[string]float64{}}
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
		switch k {
		case "used_cpu_user", "used_cpu_sys", "used_cpu_user_main_thread", "used_cpu_sys_main_thread":
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return w, false
			}
			if strings.HasSuffix(k, "_main_thread") {
				w.mainCPUUS += x * 1e6
			} else {
				w.cpuUS += x * 1e6
			}
			cpuFields++
			continue
		}
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		// calls=N,usec=N,usec_per_call=N.NN,...
		for _, f := range strings.Split(v, ",") {
			if n, ok := strings.CutPrefix(f, "calls="); ok {
				w.calls[name], _ = strconv.ParseInt(n, 10, 64)
			}
			if n, ok := strings.CutPrefix(f, "usec="); ok {
				w.usec[name], _ = strconv.ParseFloat(n, 64)
			}
		}
	}
	return w, cpuFields == 4
}

// topCommands is how many commands a storm's report names.
const topCommands = 12

// stormRedis sums up a storm's Redis work: idle from holdStart to kill, the
// storm from kill to back, over movers back.
func stormRedis(holdStart, kill, back redisWork, movers int) *StormRedis {
	s := &StormRedis{
		Seconds:     back.at.Sub(kill.at).Seconds(),
		IdleSeconds: kill.at.Sub(holdStart.at).Seconds(),
		MainCPUUS:   back.mainCPUUS - kill.mainCPUUS,
		CPUUS:       back.cpuUS - kill.cpuUS,
	}
	for name, n := range back.calls {
		if d := n - kill.calls[name]; d > 0 {
			s.Calls += d
			s.Commands = append(s.Commands, CommandCalls{Name: name, Calls: d, US: back.usec[name] - kill.usec[name]})
		}
	}
	slices.SortFunc(s.Commands, func(a, b CommandCalls) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), strings.Compare(a.Name, b.Name))
	})
	if s.IdleSeconds > 0 {
		s.IdleMainUSs = (kill.mainCPUUS - holdStart.mainCPUUS) / s.IdleSeconds
		s.IdleCPUUSs = (kill.cpuUS - holdStart.cpuUS) / s.IdleSeconds
	}
	if movers > 0 {
		s.MainCPUPerMoverUS = (s.MainCPUUS - s.IdleMainUSs*s.Seconds) / float64(movers)
		s.CPUPerMoverUS = (s.CPUUS - s.IdleCPUUSs*s.Seconds) / float64(movers)
		s.CallsPerMover = float64(s.Calls) / float64(movers)
		for i := range s.Commands {
			s.Commands[i].PerMover = float64(s.Commands[i].Calls) / float64(movers)
			s.Commands[i].USPerMover = s.Commands[i].US / float64(movers)
		}
	}
	return s
}

// String is the figures in one line, then the top commands in another.
func (s *StormRedis) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%.0f µs of main-thread CPU (%.0f µs of the process's) per mover back, less idle (%.0f and %.0f µs/s over %.1fs held); "+
		"%.1f commands per mover (a script and each command it runs); %.1fs from the kill to all back: %.0f ms of main-thread CPU in all",
		s.MainCPUPerMoverUS, s.CPUPerMoverUS, s.IdleMainUSs, s.IdleCPUUSs, s.IdleSeconds,
		s.CallsPerMover, s.Seconds, s.MainCPUUS/1e3)
	b.WriteString("\n  commands        ")
	for i, c := range s.Commands[:min(len(s.Commands), topCommands)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %.2f (%.1f µs)", c.Name, c.PerMover, c.USPerMover)
	}
	b.WriteString(" (calls and commandstats time per mover back, idle included)")
	return b.String()
}

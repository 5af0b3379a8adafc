package realtime

import "strconv"

// resumeKey is the key of uid's resume budget, under the hub's prefix, in
// the form of the edge's rate limits (redis_rate puts "rate:" before it).
func resumeKey(prefix string, uid int64) string {
	return prefix + "limit:resume:" + strconv.FormatInt(uid, 10)
}

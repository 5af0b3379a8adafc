// Package slots holds what the parts of Chorus share about Redis Cluster:
// whether a client is one, the hash tags that keep a script's keys in one
// slot, and the slot a key or channel hashes to.
package slots

import "github.com/redis/go-redis/v9"

// Count is the number of hash slots of a Redis Cluster.
const Count = 16384

// Cluster reports whether rdb talks to a Redis Cluster. On one Redis (and
// the embedded store) keys keep the names they had before clusters were
// supported, so a running deployment needs no migration.
func Cluster(rdb redis.UniversalClient) bool {
	_, ok := rdb.(*redis.ClusterClient)
	return ok
}

// Tag returns s as a hash tag ("{s}") on a cluster, and s unchanged on one
// Redis: keys that must share a slot carry the same tag.
func Tag(cluster bool, s string) string {
	if !cluster {
		return s
	}
	return "{" + s + "}"
}

// Of returns the slot key (or a sharded channel) hashes to: CRC16 of its
// hash tag, the part between the first "{" and the next "}" when that is
// not empty, else of the whole key, modulo Count.
func Of(key string) int {
	for i := 0; i < len(key); i++ {
		if key[i] == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					if j > i+1 {
						key = key[i+1 : j]
					}
					return int(crc16(key) % Count)
				}
			}
			break
		}
	}
	return int(crc16(key) % Count)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial 0), as Redis Cluster
// hashes keys.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

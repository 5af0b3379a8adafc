package presence

import (
	"strconv"
)

// toInt reads element i of a script's reply as an integer: Lua numbers
// arrive as integers, Redis scores as strings, and nil or a missing element
// as 0.
func toInt(res []any, i int) int64 {
	if i >= len(res) {
		return 0
	}
	switch v := res[i].(type) {
	case int64:
		return v
	case string:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0
		}
		return int64(f)
	}
	return 0
}

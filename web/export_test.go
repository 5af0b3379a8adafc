package web

// ConnSetup names the commands a new connection starts with, which the
// round trips of a request leave out.
var ConnSetup = connSetup

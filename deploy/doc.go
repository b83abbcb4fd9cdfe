// Package deploy holds what operators load next to Tributary, not Go code:
// the Grafana dashboard (grafana/tributary.json) and the Prometheus alert
// rules (prometheus/alerts.yml, with their unit tests in
// prometheus/alerts_test.yml). Its test checks both with promtool and
// checks that every metric they name is one Tributary exports.
package deploy

module github.com/fxelection/fxelection/modules/zookeeper

go 1.26.8

replace github.com/fxelection/fxelection => ../..

require (
	github.com/fxelection/fxelection v0.0.0-00010101000000-000000000000
	github.com/go-zookeeper/zk v1.0.4
	go.uber.org/fx v1.24.0
)

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	go.uber.org/dig v1.19.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

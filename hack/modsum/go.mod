module github.com/gangmap/gangmap/hack/modsum

go 1.26.3

require golang.org/x/mod v0.42.0

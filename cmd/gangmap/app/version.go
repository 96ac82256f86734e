package app

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/gangmap/gangmap/internal/buildversion"
)

// Version is gangmap's version, set at build time with
// -ldflags "-X github.com/gangmap/gangmap/cmd/gangmap/app.Version=v0.1.0". Without it, the
// module version or VCS revision recorded by the Go toolchain is used.
var Version = ""

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print gangmap's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "gangmap %s (%s, %s/%s)\n", buildversion.Of(Version), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}

package autoharness_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/metaharness/metaharness/autoharness"
)

// Example hands a task to the fleet's mh-claude Command (a governed
// metaharness session on a host) and prints the session's page: the
// README's lines, which TestReadmeShowsTheClient holds to these.
func Example() {
	ctx := context.Background()
	err := func() error {
		c, err := autoharness.New(autoharness.Options{BaseURL: os.Getenv("AUTO_HARNESS_URL"), APIKey: os.Getenv("AUTO_HARNESS_API_KEY")})
		if err != nil {
			return err
		}
		s, err := c.CreateSession(ctx, autoharness.SessionInput{RepositoryID: "repo-1", Prompt: "Review the latest changes",
			Target: &autoharness.TargetRef{CommandName: "mh-claude"}, Timeout: 1800})
		if err != nil {
			return err
		}
		fmt.Println(s.URL)
		return nil
	}()
	if err != nil {
		log.Fatal(err)
	}
}

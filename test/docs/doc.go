// Package docs checks that the project's documents stay true to the code: what they cite exists.
package docs

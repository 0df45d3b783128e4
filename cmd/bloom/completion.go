package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

func init() {
	register(command{name: "completion", summary: "print a shell completion script (bash, zsh or fish)", run: runCompletion})
}

// runCompletion prints a completion script for bash, zsh or fish, made from
// the registered subcommands and their flags, so it cannot fall behind
// them.
func runCompletion(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	h := help{
		name:     "completion",
		synopsis: "completion bash|zsh|fish",
		about: `Prints a script that completes bloom's subcommands, their flags and file
names in the shell. Load it in the current shell, or install it where the
shell finds it:`,
		examples: `source <(bloom completion bash)        # or: bloom completion bash > /etc/bash_completion.d/bloom
bloom completion zsh > "${fpath[1]}/_bloom"
bloom completion fish > ~/.config/fish/completions/bloom.fish`,
	}
	fs := newFlags("completion")
	pos, code, ok := parseFlags(fs, h, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageErr(stderr, "completion", "name one shell: bash, zsh or fish")
	}
	specs := completionSpecs()
	switch pos[0] {
	case "bash":
		writeBash(stdout, specs)
	case "zsh":
		writeZsh(stdout, specs)
	case "fish":
		writeFish(stdout, specs)
	default:
		return usageErr(stderr, "completion", "unknown shell %q: bash, zsh or fish", pos[0])
	}
	return exitOK
}

// compSpec is what completion knows of one subcommand.
type compSpec struct {
	name, summary string
	flags         []compFlag
}

type compFlag struct {
	name, usage string
	takesArg    bool
}

// completionSpecs asks every subcommand for its --help, with output
// discarded, and keeps the flag sets parseFlags sees.
func completionSpecs() []compSpec {
	var specs []compSpec
	for _, c := range sortedCommands() {
		spec := compSpec{name: c.name, summary: c.summary}
		flagsSeen = func(fs *flag.FlagSet, _ help) {
			fs.VisitAll(func(f *flag.Flag) {
				_, isBool := f.Value.(interface{ IsBoolFlag() bool })
				_, usage := flag.UnquoteUsage(f)
				spec.flags = append(spec.flags, compFlag{name: f.Name, usage: usage, takesArg: !isBool})
			})
		}
		c.run([]string{"--help"}, strings.NewReader(""), io.Discard, io.Discard)
		flagsSeen = nil
		specs = append(specs, spec)
	}
	return specs
}

// dashed is how the help shows a flag: -n for one letter, --name otherwise.
func (f compFlag) dashed() string {
	if len(f.name) == 1 {
		return "-" + f.name
	}
	return "--" + f.name
}

// extra are the words bloom takes besides the subcommands.
var extra = []string{"help", "version", "--help", "--version"}

func writeBash(w io.Writer, specs []compSpec) {
	var names []string
	for _, s := range specs {
		names = append(names, s.name)
	}
	fmt.Fprintf(w, `# bash completion for bloom: source <(bloom completion bash)
_bloom() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} opts= args=
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W %q -- "$cur"))
		return
	fi
	case ${COMP_WORDS[1]} in
`, strings.Join(append(slices.Clone(names), extra...), " "))
	for _, s := range specs {
		var opts, args []string
		for _, f := range s.flags {
			opts = append(opts, f.dashed())
			if f.takesArg {
				args = append(args, f.dashed())
			}
		}
		fmt.Fprintf(w, "\t%s) opts=%q; args=%q ;;\n", s.name, strings.Join(opts, " "), strings.Join(args, " "))
	}
	fmt.Fprintf(w, `	help) COMPREPLY=($(compgen -W %q -- "$cur")); return ;;
	esac
	case " $args " in
	*" $prev "*) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}
complete -o filenames -F _bloom bloom
`, strings.Join(names, " "))
}

// zshQuote escapes a description for zsh's _arguments and _describe.
func zshQuote(s string) string {
	r := strings.NewReplacer("'", "'\\''", "[", "\\[", "]", "\\]", ":", "\\:")
	return r.Replace(s)
}

func writeZsh(w io.Writer, specs []compSpec) {
	fmt.Fprint(w, `#compdef bloom
# zsh completion for bloom: bloom completion zsh > "${fpath[1]}/_bloom"
# (or, after compinit: source <(bloom completion zsh))
compdef _bloom bloom

_bloom() {
	local -a subcommands
	subcommands=(
`)
	for _, s := range specs {
		fmt.Fprintf(w, "\t\t'%s:%s'\n", s.name, zshQuote(s.summary))
	}
	fmt.Fprint(w, `		'help:show the help of bloom or of a subcommand'
		'version:print the version'
	)
	if (( CURRENT == 2 )); then
		_describe -t subcommands 'bloom subcommand' subcommands
		return
	fi
	case $words[2] in
`)
	for _, s := range specs {
		fmt.Fprintf(w, "\t%s)\n\t\t_arguments \\\n", s.name)
		for _, f := range s.flags {
			arg := ""
			if f.takesArg {
				arg = ":value:_files"
			}
			fmt.Fprintf(w, "\t\t\t'%s[%s]%s' \\\n", f.dashed(), zshQuote(f.usage), arg)
		}
		fmt.Fprint(w, "\t\t\t'*:file:_files'\n\t\t;;\n")
	}
	fmt.Fprint(w, `	help)
		_describe -t subcommands 'bloom subcommand' subcommands
		;;
	esac
}

if [ "$funcstack[1]" = "_bloom" ]; then
	_bloom "$@"
fi
`)
}

// fishQuote quotes a string for fish.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

func writeFish(w io.Writer, specs []compSpec) {
	var names []string
	for _, s := range specs {
		names = append(names, s.name)
	}
	fmt.Fprintf(w, "# fish completion for bloom: bloom completion fish > ~/.config/fish/completions/bloom.fish\n")
	fmt.Fprintf(w, "set -l bloom_subcommands %s help version\n", strings.Join(names, " "))
	for _, s := range specs {
		fmt.Fprintf(w, "complete -c bloom -f -n \"not __fish_seen_subcommand_from $bloom_subcommands\" -a %s -d %s\n", s.name, fishQuote(s.summary))
	}
	fmt.Fprint(w, "complete -c bloom -f -n \"not __fish_seen_subcommand_from $bloom_subcommands\" -a help -d 'show the help of bloom or of a subcommand'\n")
	fmt.Fprint(w, "complete -c bloom -f -n \"not __fish_seen_subcommand_from $bloom_subcommands\" -a version -d 'print the version'\n")
	for _, s := range specs {
		for _, f := range s.flags {
			opt := "-l " + f.name
			if len(f.name) == 1 {
				opt = "-s " + f.name
			}
			req := ""
			if f.takesArg {
				req = " -r"
			}
			fmt.Fprintf(w, "complete -c bloom -n \"__fish_seen_subcommand_from %s\" %s%s -d %s\n", s.name, opt, req, fishQuote(f.usage))
		}
	}
}

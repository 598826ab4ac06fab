// The strata executable's subcommands. Each takes the arguments after the subcommand
// name (argv[0] is the subcommand) and returns the process exit code.
#pragma once

int cmd_info(int argc, char** argv);

// The strata executable's subcommands. Each takes the arguments after the subcommand
// name (argv[0] is the subcommand) and returns the process exit code.
#pragma once

int cmd_info(int argc, char** argv);
int cmd_record(int argc, char** argv);  // collector: launch a job with the agent
int cmd_attach(int argc, char** argv);  // collector: record from a running job
int cmd_summary(int argc, char** argv);   // annotation findings as text or JSON
int cmd_annotate(int argc, char** argv);  // the trace plus annotation tiers, for Perfetto
int cmd_predict(int argc, char** argv);   // memory and time against the batch size
int cmd_whatif(int argc, char** argv);    // predicted iteration time under changed durations
#ifdef STRATA_HAVE_VIEWER
int cmd_view(int argc, char** argv);    // the viewer; headless screenshot / benchmark modes
bool viewer_display_available();        // a display to open a window on
#endif

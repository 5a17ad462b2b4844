"""The hostile-inputs catalogue: every attack of the three hardening rounds, and the tests that
re-run it (issue #38: "re-run rounds one to three's attacks as tests").

The rounds are issue #17 (round one; the hostile files of issue #6 before it are filed under
round one too), issue #25 (round two) and issue #38 (round three). Each :class:`Attack` names
its round, its issue, the attack in one line as the CHANGELOG or the issue states it, and the
tests that make it (pytest node ids, ``tests/path.py::test_function``, no parametrize ids). A
round-three attack also names the item of issue #38 it is (1 to 12; item 11's sub-attacks one
entry each).

To add an attack: write its test first (one that fails on the tree before the fix), then add its
entry to :data:`CATALOGUE`. A new ``tests/test_hostile*.py`` or ``tests/test_hardening*.py`` file
(in ``tests/`` or ``tests/e2e/``) fails :func:`test_every_hostile_or_hardening_file_is_catalogued`
until an entry names it.

Re-run a round's attacks (or all of them, with no argument)::

    pytest -q $(.venv/bin/python -m tests.test_hostile_catalogue 3)

:func:`node_ids` gives the same list to Python. The checks here only parse the test files
(``ast``): they run nothing.
"""

from __future__ import annotations

import ast
import sys
from functools import cache
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent


class Attack(NamedTuple):
    round: int  # 1 (#17, and #6's hostile files), 2 (#25), 3 (#38)
    issue: int
    attack: str  # one line, as the CHANGELOG or the issue states it
    tests: tuple[str, ...]  # pytest node ids: tests/path.py::test_function
    item: int | None = None  # round three: the item of issue #38 (1 to 12)


H = "tests/test_hostile.py::"
HI = "tests/test_hostile_inputs.py::"
HP = "tests/test_hostile_policy.py::"
JB = "tests/test_judge_bounds.py::"
SO = "tests/test_store_open.py::"
SB = "tests/test_store_busy.py::"
XS = "tests/test_exports_safety.py::"
BO = "tests/test_boundary.py::"
IN = "tests/test_interrupt.py::"
MI = "tests/test_migrate.py::"
WEB = "tests/test_hardening_web.py::"
WEBB = "tests/e2e/test_hardening_web_browser.py::"
CL = "tests/test_hardening_claims.py::"
MA = "tests/test_hardening_mask.py::"
FI = "tests/test_hardening_files.py::"
BA = "tests/test_hardening_batch.py::"
PA = "tests/test_hardening_pages.py::"
VA = "tests/test_hardening_values.py::"
VALUE = VA + "test_a_hostile_value_is_refused_before_work_starts"  # a subprocess per hostile value

CATALOGUE: tuple[Attack, ...] = (
    # ------------------------------------------------------------------ #6: hostile files
    Attack(
        1,
        6,
        "79 malformed files across every format: each refused in one line naming file, line and field, "
        "exit 2, the database untouched",
        (
            H + "test_the_corpus_is_listed_whole",
            H + "test_import_refuses_and_writes_nothing",
            H + "test_metrics_refuses",
            H + "test_calibration_refuses_bad_csv",
            H + "test_end_to_end_one_line_no_traceback",
        ),
    ),
    Attack(
        1,
        6,
        "a malformed upload on the pages: st.error with the reader's message, never a traceback",
        (
            H + "test_import_uploads_raises_the_named_error",
            H + "test_data_page_says_nothing_was_imported",
            H + "test_metrics_page_shows_the_readers_message",
        ),
    ),
    Attack(
        1,
        6,
        "random bytes and near-valid lines into every reader (a hypothesis fuzz): only named input errors",
        (
            H + "test_fuzz_random_bytes",
            H + "test_fuzz_near_valid_lines",
            H + "test_fuzz_json_objects",
            H + "test_fuzz_trec_tokens",
            H + "test_fuzz_golden_token_soup",
            H + "test_fuzz_beir_folders",
            H + "test_fuzz_csv_reader",
        ),
    ),
    Attack(
        1,
        6,
        "a quadratic number regex: a 16 MB token of digits ending in a letter (and other one-line files "
        "of 16 MB)",
        (
            H + "test_a_huge_single_line_gives_a_short_message",
            H + "test_a_huge_corpus_line_is_refused_by_import",
        ),
    ),
    Attack(
        1,
        6,
        "integers past 64 bits (a 5,000-digit grade or number)",
        (
            H + "test_import_refuses_and_writes_nothing",
            H + "test_metrics_refuses",
            H + "test_the_json_reader_is_strict_but_keeps_what_json_allows",
        ),
    ),
    Attack(
        1,
        6,
        "NaN/Infinity and duplicate keys in JSONL",
        (H + "test_import_refuses_and_writes_nothing", H + "test_printable_field_names"),
    ),
    Attack(
        1,
        6,
        "YAML line-break characters (NEL, U+2028, U+2029) in golden.yaml",
        (H + "test_import_refuses_and_writes_nothing", H + "test_golden_line_breaks_round_trip"),
    ),
    Attack(
        1,
        6,
        "a negative min_grade in golden.yaml",
        (
            H + "test_import_refuses_and_writes_nothing",
            "tests/test_cli.py::test_min_grade_is_never_negative_and_golden_sets_the_default",
        ),
    ),
    Attack(1, 6, "a three-column query TSV", (H + "test_import_refuses_and_writes_nothing",)),
    Attack(
        1,
        6,
        "UTF-16 files (a byte order mark) given as UTF-8",
        (H + "test_import_refuses_and_writes_nothing", H + "test_calibration_refuses_bad_csv"),
    ),
    Attack(
        1,
        6,
        "the CSV readers: BOM, NUL, CR, quotes, extra fields, non-ASCII digits",
        (H + "test_calibration_refuses_bad_csv", H + "test_fuzz_csv_reader"),
    ),
    Attack(
        1,
        6,
        "an off-scale grade: it names its file and line",
        (H + "test_import_refuses_and_writes_nothing",),
    ),
    Attack(
        1,
        6,
        "ppi with one labelled row",
        (H + "test_calibration_refuses_bad_csv", H + "test_ppi_names_the_unlabeled_file_too"),
    ),
    Attack(
        1,
        6,
        "an upload named '..' on the Data page (upload names sanitised)",
        (
            "tests/test_review_access.py::test_review_upload_name_dotdot_is_an_input_error",
            PA + "test_an_upload_name_no_file_can_have_is_refused_on_the_data_page",
        ),
    ),
    # ------------------------------------------------------------------ #17: round one
    Attack(
        1,
        17,
        "a judge endpoint's long Retry-After (or one past the call's deadline) waited out",
        (JB + "test_a_huge_retry_after_is_an_error_row_not_a_wait",),
    ),
    Attack(
        1,
        17,
        "a judge endpoint's 20 MB reply read whole (--max-reply-bytes)",
        (JB + "test_a_huge_reply_is_an_error_row_with_its_first_kb",),
    ),
    Attack(
        1,
        17,
        "a reply dripped at 1 byte/s: --timeout was per read (415 s), not the call's whole deadline",
        (JB + "test_a_dripping_endpoint_is_cut_at_the_calls_total_deadline",),
    ),
    Attack(
        1,
        17,
        "Ctrl-C/SIGTERM during the judge's retry waits and calls in flight: it waited",
        (
            JB + "test_sigterm_ends_a_dripping_call_within_the_grace",
            JB + "test_sigterm_ends_a_retry_after_wait_at_once",
        ),
    ),
    Attack(
        1,
        17,
        "the judge followed redirects: another host's answers stored under the first endpoint's fingerprint",
        (JB + "test_a_redirect_is_not_followed_and_names_its_target",),
    ),
    Attack(
        1,
        17,
        "unbounded numeric judge options: --seed 99999999999999999999, --timeout nan, --temperature nan",
        (
            JB + "test_numbers_no_machine_holds_are_one_line_exit_2",
            JB + "test_the_offline_judges_seed_is_bounded_too",
        ),
    ),
    Attack(
        1,
        17,
        "compare --dry-run --repeats 1000000 built every call (a MemoryError)",
        (JB + "test_a_dry_run_counts_repeats_without_building_them",),
    ),
    Attack(
        1,
        17,
        "another process's write lock held mid judge run: exit 2 with answers lost",
        (
            JB + "test_a_held_write_lock_loses_no_answer",
            JB + "test_a_lock_held_past_the_writers_wait_says_how_many_answers",
        ),
    ),
    Attack(
        1,
        17,
        "golden.yaml's sampling: section holding a date, a key that is not text, NaN or infinity",
        (
            HI + "test_a_sampling_section_json_cannot_hold_is_refused",
            HI + "test_a_sampling_date_through_the_data_page",
        ),
    ),
    Attack(
        1,
        17,
        "trace exports nested more than 128 levels (a RecursionError)",
        (HI + "test_deeply_nested_trace_exports_are_refused",),
    ),
    Attack(
        1,
        17,
        "a file over DENOMINATOR_MAX_FILE_BYTES read whole before it is judged",
        (
            HI + "test_a_file_over_the_size_limit_is_refused_before_it_is_read",
            HI + "test_the_agree_csv_is_size_limited_too",
            HI + "test_a_bad_limit_setting_is_one_line",
        ),
    ),
    Attack(
        1,
        17,
        "a line over DENOMINATOR_MAX_LINE_BYTES held whole",
        (
            HI + "test_a_line_over_the_line_limit_is_refused_before_it_is_held",
            HI + "test_the_line_limit_at_its_default_bounds_memory",
        ),
    ),
    Attack(
        1,
        17,
        "a 1 GB chunk text (4.45 GB RSS and a traceback; DENOMINATOR_MAX_TEXT_BYTES)",
        (
            HI + "test_a_chunk_text_over_1_mib_is_refused",
            HI + "test_other_texts_over_the_text_limit",
            HI + "test_a_chunk_text_of_a_trace_export_over_the_text_limit",
        ),
    ),
    Attack(
        1,
        17,
        "20M dictionary-encoded Parquet rows (8.2 GB; DENOMINATOR_MAX_ROWS from the metadata)",
        (
            HI + "test_a_parquet_file_over_the_row_limit_is_refused_from_its_metadata",
            HI + "test_the_row_limit_is_configurable",
            HI + "test_a_parquet_file_that_expands_past_the_size_limit",
        ),
    ),
    Attack(
        1,
        17,
        "a 1.5 GB file of NULs read whole by the NUL-byte check (1.8 GB RSS)",
        (
            HI + "test_a_nul_byte_in_a_1_gib_file_is_refused_at_its_block",
            HI + "test_run_files_are_exempt_and_a_nul_byte_is_refused_at_its_block",
            HI + "test_the_streaming_checks_keep_the_old_messages",
        ),
    ),
    Attack(
        1,
        17,
        "numeric options past 2^63 - 1 or nan: pool --depth 99999999999999999999, compare --seed -1, "
        "pool --overlap nan",
        (
            HI + "test_pool_numbers_are_bounded",
            HI + "test_the_largest_pool_depth_works",
            HI + "test_calibration_numbers_are_bounded",
        ),
    ),
    Attack(
        1,
        17,
        "calibration agree with 1,000 raters x 3 items (did not finish in 70 s)",
        (
            HI + "test_agree_with_1000_raters_finishes_in_seconds",
            HI + "test_the_table_says_when_the_pairs_were_cut",
            HI + "test_listed_pairs_are_those_with_most_items_in_common",
            HI + "test_krippendorff_from_counts_equals_the_matrix_bit_for_bit",
        ),
    ),
    Attack(
        1,
        17,
        "an annotator's DOM held store ids (query, trace, item ids, run or system names)",
        ("tests/e2e/test_opaque_dom.py::test_the_annotators_dom_holds_no_store_id",),
    ),
    Attack(
        1,
        17,
        "the note box's widget key was the item's id (it hinted at the system that wrote the answer)",
        (
            "tests/test_labelling.py::test_label_traces_page_grades_faithfulness_with_a_note",
            "tests/e2e/test_opaque_dom.py::test_the_annotators_dom_holds_no_store_id",
        ),
    ),
    Attack(
        1,
        17,
        "data strings acting in the browser: Markdown images and links, HTML, autolinks, heading anchors "
        "pointing at a beacon",
        (
            "tests/e2e/test_beacon_browser.py::test_no_string_from_the_data_acts_on_any_page",
            "tests/test_escaping.py::test_md_escapes_every_markdown_and_html_mark_and_keeps_the_text",
        ),
    ),
    Attack(
        1,
        17,
        "opening the store took the write lock: readers waited for an import",
        (
            SO + "test_opening_and_reading_never_wait_for_a_writer",
            SO + "test_an_open_of_a_current_store_starts_no_write",
            SO + "test_postgresql_reads_never_wait_for_a_writer",
        ),
    ),
    Attack(
        1,
        17,
        "a label key press during a long write: a traceback, or read as a revoked token",
        (
            SB + "test_a_write_under_a_held_lock_is_store_busy_within_the_bound",
            SB + "test_a_key_press_under_a_long_write_says_busy_and_loses_nothing",
            SB + "test_a_signed_in_annotator_is_never_told_the_token_was_revoked",
            SB + "test_signing_in_under_a_long_write_says_busy_and_keeps_the_token",
            SB + "test_undo_under_a_long_write_says_busy_and_can_be_pressed_again",
        ),
    ),
    Attack(
        1,
        17,
        "a database with an unknown newer migration, or missing an append-only trigger",
        (
            SO + "test_a_newer_schema_is_refused_with_its_version_named",
            SO + "test_missing_append_only_triggers_are_refused_with_the_version",
            SO + "test_a_newer_postgresql_schema_and_a_missing_guard_are_refused",
        ),
    ),
    Attack(
        1,
        17,
        "a full disk ('cannot rollback - no transaction is active') and disk I/O errors",
        (
            SO + "test_disk_full_says_so_and_rolls_back_once",
            SO + "test_a_disk_io_error_at_open_is_reported_as_such",
        ),
    ),
    Attack(
        1,
        17,
        "a foreign file named as the store: written to (a WAL switch) before it was refused",
        (
            SO + "test_a_foreign_sqlite_file_is_refused_untouched",
            SO + "test_a_file_that_is_not_sqlite_is_refused_untouched",
            SO + "test_a_foreign_postgresql_database_is_refused_untouched",
        ),
    ),
    Attack(
        1,
        17,
        "CSV exports run as spreadsheet formulas (a cell starting with =, +, -, @, tab, CR); a CR splits a row",
        (
            XS + "test_csv_notes_that_start_a_formula_are_prefixed_with_a_quote",
            XS + "test_write_csv_prefixes_text_cells_only",
            XS + "test_phoenix_csv_is_spreadsheet_safe",
        ),
    ),
    Attack(
        1,
        17,
        "golden.yaml's judged_by listed everyone with any label row",
        (XS + "test_golden_judged_by_lists_only_those_whose_labels_are_in_it",),
    ),
    Attack(
        1,
        17,
        "exports name the annotators (export --anonymize: stable pseudonyms annotator-N)",
        (
            XS + "test_the_summary_says_when_the_file_names_people",
            XS + "test_anonymize_leaves_no_name_in_the_file_or_the_summary",
            XS + "test_the_command_line_anonymizes",
            XS + "test_the_page_anonymizes",
        ),
    ),
    Attack(
        1,
        17,
        "DNS rebinding: a foreign Host and Origin reached the page, the session routes and the WebSocket",
        ("tests/e2e/test_host_check.py::test_a_foreign_host_is_refused_and_loopback_is_served",),
    ),
    # ------------------------------------------------------------------ #25: round two
    Attack(
        2,
        25,
        "judge batch collect trusted the batch's files: ids never submitted (a missing item, a repeat of "
        "10^30), lines not JSON, six 50 MB lines",
        ("tests/test_judge_batch.py::test_collect_trusts_nothing_in_the_output_file",),
    ),
    Attack(
        2,
        25,
        "a PostgreSQL password as a query parameter (?password=, sslpassword=, user=) printed",
        (
            "tests/test_no_password_printed.py::test_no_command_prints_the_password",
            "tests/test_no_password_printed.py::test_no_page_prints_the_password",
            "tests/test_postgres_dialect.py::test_a_url_is_printed_without_credentials",
        ),
    ),
    Attack(
        2,
        25,
        "a hostile policy file: an alias bomb, nesting deeper than 64, a key given twice, a tag, a FIFO, "
        "a 351 MB value quoted",
        (
            HP + "test_a_hostile_policy_file_is_one_short_line_and_exit_2",
            HP + "test_a_fifo_as_the_policy_is_refused_before_it_is_opened",
            HP + "test_the_same_file_written_plainly_is_read",
        ),
    ),
    Attack(
        2,
        25,
        "a recorded check whose report is not JSON or not a report: history, the Metrics page and --diff",
        ("tests/test_check_evidence.py::test_an_unreadable_recorded_report_is_skipped_and_named",),
    ),
    Attack(
        2,
        25,
        "a NUL character (\\u0000 in JSON or YAML): stored on SQLite, a DataError on PostgreSQL",
        (
            "tests/test_nul.py::test_a_nul_character_is_refused_at_import_on_both_backends",
            "tests/test_nul.py::test_a_search_for_a_nul_character_is_a_store_error",
        ),
    ),
    Attack(
        2,
        25,
        "migrate from SQLite to PostgreSQL of rows holding a NUL: a traceback and a half-copied target",
        (MI + "test_nul_characters_are_named_before_anything_is_written",),
    ),
    Attack(
        2,
        25,
        "Ctrl-C on a command line: a KeyboardInterrupt traceback (also while python -m GROUP imports)",
        (
            IN + "test_an_interrupted_import_is_one_line_exit_130_and_leaves_nothing",
            IN + "test_every_cli_turns_ctrl_c_into_one_line",
            IN + "test_ctrl_c_while_the_modules_import_is_one_line",
            IN + "test_ctrl_c_at_any_point_of_a_command_is_one_line_and_nothing_half_written",
            BO + "test_ctrl_c_and_a_closed_pipe_at_the_boundary",
        ),
    ),
    Attack(
        2,
        25,
        "a closed pipe (`| head`) under a command line: Broken pipe and a traceback",
        (BO + "test_a_closed_pipe_is_no_error",),
    ),
    Attack(
        2,
        25,
        "passfile= in a printed URL or connection string: the password file's path shown",
        (MA + "test_a_password_file_is_never_printed",),
    ),
    Attack(
        2,
        25,
        "any error on the three command lines (eight kinds): tracebacks, unmasked driver errors",
        (
            BO + "test_every_named_error_has_one_root",
            BO + "test_every_command_says_any_error_in_one_line",
            BO + "test_debug_shows_the_traceback_of_a_bug",
            BO + "test_masked_and_described",
        ),
    ),
    Attack(
        2,
        25,
        "any error on the pages; a store that cannot be read showed the bare sign-in page",
        (
            BO + "test_every_page_says_any_error_in_one_line",
            BO + "test_an_unreadable_store_is_no_signed_out_user",
        ),
    ),
    Attack(
        2,
        25,
        "login CSRF: a ?token= link from another site signed the admin's browser in as an annotator",
        (
            "tests/e2e/test_sessions_browser.py::test_a_link_from_another_site_signs_no_one_in",
            "tests/test_sessions.py::test_a_token_link_answers_with_its_page_and_signs_in_only_by_its_button",
            "tests/test_access.py::test_a_token_link_on_the_page_waits_for_its_button",
        ),
    ),
    Attack(
        2,
        25,
        "agree with 6,000 raters x 3 items: 2.25 GB (a table of every overlapping pair)",
        (
            HI + "test_agree_memory_is_linear_in_the_ratings",
            HI + "test_the_listed_pairs_equal_a_count_of_every_pair",
            HI + "test_below_the_cap_every_pair_is_listed_as_before",
        ),
    ),
    Attack(
        2,
        25,
        "a failed migrate left a half-copied target that refused the retry",
        (
            MI + "test_a_failed_migrate_leaves_the_target_empty_and_can_run_again",
            MI + "test_a_target_holding_rows_is_refused_and_left_as_it_was",
        ),
    ),
    Attack(
        2,
        25,
        "unreadable records: a judge's settings not JSON, a review's figures not numbers, an answer no grade",
        (
            BO + "test_unreadable_records_are_named_and_skipped_by_the_commands",
            BO + "test_unreadable_records_are_named_on_the_pages",
        ),
    ),
    Attack(
        2,
        25,
        "the store going away under a command (PostgreSQL shut down mid judge run): a traceback, exit 1",
        ("tests/test_judge_resume.py::test_the_store_dying_mid_run_is_one_line_and_the_run_resumes",),
    ),
    Attack(
        2,
        25,
        "a 0-byte file named as the store: check wrote a schema into it",
        (BO + "test_a_command_that_reads_leaves_an_empty_file_as_it_was",),
    ),
    Attack(
        2,
        25,
        "the suite on a loaded machine: wall-clock asserts and browser reads that raced a redraw",
        (
            "tests/test_structure.py::test_every_wall_clock_bound_is_marked",
            "tests/e2e/test_session.py::test_keyboard_session_survives_a_kill",
        ),
    ),
    Attack(
        2,
        25,
        "the app server SIGKILLed right after a key press and started again on the same port",
        ("tests/e2e/test_session.py::test_a_server_killed_mid_labelling_loses_and_doubles_nothing",),
    ),
    # ------------------------------------------------------------------ #38: round three
    Attack(
        3,
        38,
        "#38.1: a reflected </script> in the sign-in link page's decoded path ran script from its own address",
        (
            WEB + "test_a_link_carrying_a_script_in_its_path_gets_a_page_without_inline_script",
            WEB + "test_the_link_pages_escape_every_value_for_its_place",
            WEB + "test_render_escapes_by_context_and_refuses_a_placeholder_without_one",
            WEB + "test_the_link_script_is_a_file_of_this_server",
            WEB + "test_only_the_template_serves_html",
            WEB + "test_the_sidebar_script_escapes_its_literals",
            WEBB + "test_a_link_from_another_site_runs_no_script_and_signs_no_one_in",
        ),
        item=1,
    ),
    Attack(
        3,
        38,
        "#38.2: a 1 GB POST to /_denominator/session or /_denominator/link read whole before any sign-in",
        (
            WEB + "test_every_route_reads_at_most_its_limit",
            WEB + "test_a_body_past_the_limit_is_refused_saying_so",
            WEB + "test_a_gigabyte_to_every_route_grows_the_server_by_less_than_10_mb",
        ),
        item=2,
    ),
    Attack(
        3,
        38,
        "#38.3: map-claim is_logged_in=true --role admin let anyone with an account at the provider in as admin",
        (
            CL + "test_a_rule_may_name_only_claims_the_provider_asserts_about_the_person",
            CL + "test_a_rule_stored_before_the_allow_list_matches_no_one",
            CL + "test_map_claim_refuses_a_claim_off_the_list_in_one_line",
        ),
        item=3,
    ),
    Attack(
        3,
        38,
        "#38.4: a revoked person came back: the same provider account signing in with another verified e-mail",
        (
            CL + "test_a_revoked_person_added_by_a_rule_stays_out_under_another_email",
            CL + "test_a_revoked_person_added_by_email_stays_out_under_another_email",
            CL + "test_a_recorded_subject_matches_its_own_issuer_only",
        ),
        item=4,
    ),
    Attack(
        3,
        38,
        "#38.5: masking stopped at the first @ (***@S3cret@127.0.0.1): the command line, the serve banner, "
        "the app's first page",
        (
            MA + "test_a_url_shape_is_masked_where_it_is_printed",
            MA + "test_the_drivers_quotes_of_a_password_are_masked",
            MA + "test_no_password_shape_is_printed_by_any_output",
        ),
        item=5,
    ),
    Attack(
        3,
        38,
        '#38.5: libpq\'s own error quotes the password (invalid percent-encoded token: "50%off!S3cret")',
        (
            MA + "test_the_drivers_quotes_of_a_password_are_masked",
            MA + "test_a_drivers_own_error_is_masked_without_the_url",
            MA + "test_no_password_shape_is_printed_by_any_output",
        ),
        item=5,
    ),
    Attack(
        3,
        38,
        "#38.5: ?pass%77ord=... (a percent-encoded parameter name) not masked",
        (
            MA + "test_a_url_shape_is_masked_where_it_is_printed",
            MA + "test_no_password_shape_is_printed_by_any_output",
            MA + "test_redact_fingerprint_outputs_stay_as_they_were",
        ),
        item=5,
    ),
    Attack(
        3,
        38,
        "#38.5: judge --base-url carrying user:password@ (refused without repeating it)",
        (VALUE, VA + "test_endpoint_addresses"),
        item=5,
    ),
    Attack(
        3,
        38,
        "#38.6: the app could be framed: another site framed the admin Data page, another port /data signed in",
        (
            WEB + "test_every_response_refuses_to_be_framed",
            WEBB + "test_another_site_cannot_frame_the_app",
        ),
        item=6,
    ),
    Attack(
        3,
        38,
        "#38.7: -o/--out onto a device node or a symlink turned it into a regular file (--out /dev/full)",
        (
            FI + "test_a_fifo_target_is_refused_and_stays_a_fifo",
            FI + "test_a_symlink_target_is_refused_and_what_it_points_to_is_untouched",
            FI + "test_a_device_is_refused_before_anything_is_written",
            FI + "test_holes_out_onto_a_fifo_or_a_link_one_line_exit_2_nothing_written",
            FI + "test_the_folder_export_refuses_a_link_and_a_fifo",
        ),
        item=7,
    ),
    Attack(
        3,
        38,
        "#38.7: a symlink planted at the predictable temp name .<name>.tmp-<pid> was written through",
        (
            FI + "test_a_link_planted_at_the_old_temporary_name_is_not_written_through",
            FI + "test_a_link_planted_at_the_random_temporary_name_is_passed_over",
            FI + "test_the_folder_export_does_not_write_through_a_link_at_its_old_stage_name",
            FI + "test_a_replaced_file_keeps_its_mode_and_a_new_one_gets_the_umasks",
            FI + "test_the_folder_export_keeps_the_folders_and_its_files_modes",
        ),
        item=7,
    ),
    Attack(
        3,
        38,
        "#38.8: batch collect read the submitted ids from the endpoint: <fp>/999999/-/0 (FOREIGN KEY), "
        "a repeat of 10^30 (OverflowError)",
        (
            BA + "test_submit_records_the_calls_it_sent_and_the_record_is_append_only",
            BA + "test_answers_for_ids_the_batch_did_not_send_are_ignored_whatever_the_endpoint_lists",
            BA + "test_a_batch_sent_before_its_calls_were_recorded_is_checked_against_the_judges_calls",
            BA + "test_a_batch_whose_calls_could_not_be_recorded_is_named_and_still_collected",
        ),
        item=8,
    ),
    Attack(
        3,
        38,
        "#38.8: each of five calls answered with 50 MB: collect stored nothing, not even an error row (344 MB)",
        (BA + "test_answers_over_the_reply_limit_are_error_rows_asked_again_read_in_bounded_memory",),
        item=8,
    ),
    Attack(
        3,
        38,
        "#38.9: holes -k 20 said judged@20 0.71 = 57 / 80: empty positions of a short ranking counted as judged",
        (
            FI + "test_holes_at_20_judged_is_the_rows_sum_over_the_positions_filled",
            FI + "test_holes_at_5_full_rankings_say_what_they_said",
            FI + "test_a_repeated_id_keeps_its_slot_and_is_not_judged",
            FI + "test_the_metrics_page_says_judged_at_20_as_the_cli",
        ),
        item=9,
    ),
    Attack(
        3,
        38,
        "#38.10: NUL from Langfuse and LangSmith exports: stored on SQLite, a DataError naming nothing on "
        "PostgreSQL",
        (
            FI + "test_a_nul_in_a_trace_export_is_refused_and_the_store_is_unchanged",
            FI + "test_a_nul_in_json_lines_names_its_line_and_a_nul_in_a_key_its_name",
            FI + "test_a_nul_spelled_inside_a_json_text_is_refused_when_decoded",
            FI + "test_an_escaped_backslash_before_u0000_is_text_not_nul",
        ),
        item=10,
    ),
    Attack(
        3,
        38,
        "#38.11: a late key press after a lapsed lease landed after a third person got the item (handout 2)",
        (
            CL + "test_a_late_key_press_never_makes_a_third_label_under_handout_2",
            CL + "test_a_late_key_press_is_refused_while_two_others_hold_the_item",
            CL + "test_a_late_key_press_lands_while_the_item_still_has_a_place",
            CL + "test_the_late_key_press_is_told_why_nothing_was_saved",
        ),
        item=11,
    ),
    Attack(
        3,
        38,
        "#38.11: golden.yaml query texts bypassed the 1 MiB text limit (a 20 MiB query stored)",
        (
            FI + "test_a_golden_query_text_over_the_limit_is_refused_naming_the_query",
            FI + "test_a_golden_query_text_over_the_limit_is_not_stored",
        ),
        item=11,
    ),
    Attack(
        3,
        38,
        "#38.11: judge list --prices /dev/zero read until memory ran out",
        (
            VALUE,
            VA + "test_small_files_refuse_fifos_devices_and_size_without_reading",
            VA + "test_a_price_table_that_is_a_fifo_or_not_utf8_is_named",
        ),
        item=11,
    ),
    Attack(
        3,
        38,
        "#38.11: compare --permutations 9223372036854775807 ran past a minute",
        (
            VALUE,
            VA + "test_permutations_up_to_the_bound_are_taken",
            HI + "test_calibration_numbers_are_bounded",
        ),
        item=11,
    ),
    Attack(
        3,
        38,
        "#38.11: judge grade --base-url ftp://x retried six times instead of refusing the scheme",
        (
            VALUE,
            VA + "test_endpoint_addresses",
            VA + "test_a_bad_value_is_an_argparse_error_and_a_named_error",
        ),
        item=11,
    ),
    Attack(
        3,
        38,
        "#38.11: export --format qrels --judge '' wrote people's grades",
        (VALUE, VA + "test_the_one_name_rule"),
        item=11,
    ),
    Attack(
        3,
        38,
        "#38.11: baseline --name '' stored a run that import --run refuses",
        (
            VALUE,
            VA + "test_the_one_name_rule",
            VA + "test_a_baseline_named_nothing_is_refused_by_the_library_too",
        ),
        item=11,
    ),
    Attack(
        3,
        38,
        "#38.11: 'a bug in Denominator' for judge batch collect ''",
        (VALUE,),
        item=11,
    ),
    Attack(
        3,
        38,
        "#38.11: 'a bug in Denominator' for history --diff on a corrupt row",
        (VALUE, PA + "test_a_stored_report_of_the_wrong_shape_is_named_not_a_bug"),
        item=11,
    ),
    Attack(
        3,
        38,
        "#38.11: 'a bug in Denominator' for a non-UTF-8 secrets file",
        (VALUE,),
        item=11,
    ),
    Attack(
        3,
        38,
        "#38.11: 'a bug in Denominator' for a Metrics upload named '..', holding a NUL or over 255 bytes",
        (
            PA + "test_an_upload_name_no_file_can_have_is_refused_on_the_metrics_page",
            PA + "test_an_upload_name_no_file_can_have_is_refused_on_the_data_page",
            PA + "test_upload_file_name_keeps_an_ordinary_name",
        ),
        item=11,
    ),
    Attack(
        3,
        38,
        "#38.11: 'a bug in Denominator' for DENOMINATOR_SESSION_HOURS=1e9",
        (VALUE, VA + "test_session_hours_are_bounded"),
        item=11,
    ),
    Attack(
        3,
        38,
        "#38.11: serve --secrets FIFO hung",
        (VALUE, VA + "test_small_files_refuse_fifos_devices_and_size_without_reading"),
        item=11,
    ),
    Attack(
        3,
        38,
        "#38.11: DENOMINATOR_DB=FIFO hung",
        (VALUE,),
        item=11,
    ),
    Attack(
        3,
        38,
        "#38.11: the Metrics page's history table rendered a stored value as Markdown (an image fetched a "
        "beacon); the Data page's imports table too",
        (
            PA + "test_a_stored_value_in_the_history_and_its_diff_is_text",
            PA + "test_a_stored_import_time_is_text_on_the_data_page",
        ),
        item=11,
    ),
    Attack(
        3,
        38,
        "#38.11: the store's path or host shown before sign-in when the store is down",
        (
            PA + "test_the_store_down_names_no_path_or_host_before_sign_in",
            PA + "test_a_signed_in_admin_reads_the_stores_own_words",
        ),
        item=11,
    ),
    Attack(
        3,
        38,
        "#38.11: a 20 MB zip of 200,000 empty entries took 60 s on the Data page",
        (
            PA + "test_a_zip_of_too_many_entries_is_refused_before_its_directory_is_read",
            PA + "test_a_zip_whose_last_record_undercounts_is_refused_too",
            PA + "test_the_data_page_refuses_a_zip_of_200000_empty_entries",
            PA + "test_the_limits_are_in_the_docs",
        ),
        item=11,
    ),
    Attack(
        3,
        38,
        "#38.12: the suite on a loaded machine: a browser test read the item once, before it rendered "
        "after the reload",
        ("tests/e2e/test_leases_browser.py::test_a_reload_keeps_the_item_on_screen_and_the_skipped_list",),
        item=12,
    ),
)

ROUNDS = {1: {6, 17}, 2: {25}, 3: {38}}


def node_ids(round: int | None = None) -> list[str]:
    """The catalogue's node ids, each once, in catalogue order: every round's, or one round's."""
    seen: dict[str, None] = {}
    for attack in CATALOGUE:
        if round is None or attack.round == round:
            seen.update(dict.fromkeys(attack.tests))
    return list(seen)


@cache
def defined_tests(path: str) -> frozenset[str]:
    """The tests a file defines: ``test_x`` at module level, ``TestY::test_x`` in a class."""
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    found = {n.name for n in tree.body if isinstance(n, functions) and n.name.startswith("test")}
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and cls.name.startswith("Test"):
            found |= {
                f"{cls.name}::{n.name}"
                for n in cls.body
                if isinstance(n, functions) and n.name.startswith("test")
            }
    return frozenset(found)


def test_every_node_id_names_a_test_that_exists() -> None:
    missing = []
    for attack in CATALOGUE:
        assert attack.tests, attack
        for node in attack.tests:
            path, sep, name = node.partition("::")
            if not (sep and path.startswith("tests/") and path.endswith(".py") and (ROOT / path).is_file()):
                missing.append(f"{node}: no such file")
            elif name not in defined_tests(path):
                missing.append(f"{node}: no such test in {path}")
    assert not missing, "\n".join(missing)


def test_every_hostile_or_hardening_file_is_catalogued() -> None:
    files = {
        path.relative_to(ROOT).as_posix()
        for folder in ("tests", "tests/e2e")
        for prefix in ("test_hostile", "test_hardening")
        for path in (ROOT / folder).glob(f"{prefix}*.py")
    }
    files.discard(Path(__file__).resolve().relative_to(ROOT).as_posix())  # the catalogue itself
    named = {node.partition("::")[0] for attack in CATALOGUE for node in attack.tests}
    assert len(files) >= 11
    assert sorted(files - named) == []


def test_the_three_rounds_are_here_and_round_three_covers_items_1_to_12() -> None:
    assert {attack.round for attack in CATALOGUE} == set(ROUNDS)
    for attack in CATALOGUE:
        assert attack.issue in ROUNDS[attack.round], attack
        assert attack.attack and "\n" not in attack.attack, attack
        if attack.round == 3:
            assert attack.item in range(1, 13) and attack.attack.startswith(f"#38.{attack.item}: "), attack
        else:
            assert attack.item is None, attack
    assert {attack.item for attack in CATALOGUE if attack.round == 3} == set(range(1, 13))
    assert {attack.issue for attack in CATALOGUE} == {6, 17, 25, 38}
    assert len({attack.attack for attack in CATALOGUE}) == len(CATALOGUE)  # no attack twice


def test_node_ids_by_round() -> None:
    every = node_ids()
    assert len(every) == len(set(every))
    assert set(every) == {node for r in ROUNDS for node in node_ids(r)}
    assert VALUE in node_ids(3) and VALUE not in node_ids(1)


if __name__ == "__main__":
    # python -m tests.test_hostile_catalogue [ROUND]: the node ids, one a line, for pytest's argv
    print("\n".join(node_ids(int(sys.argv[1]) if len(sys.argv) > 1 else None)))

"""The README carries facts generated from the code; these tests keep them in step."""
from pathlib import Path

from intake.questionnaire import markdown_table

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_readme_questionnaire_table_is_the_generated_one():
    start = README.index("<!-- questionnaire:start -->") + len("<!-- questionnaire:start -->")
    end = README.index("<!-- questionnaire:end -->")
    assert README[start:end].strip() == markdown_table().strip(), "run: python manage.py questionnaire_docs"


def test_readme_names_the_two_commands_and_ci_runs_the_test_command():
    assert "./scripts/demo" in README and "./scripts/test" in README
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    assert "./scripts/test" in ci

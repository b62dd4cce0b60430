"""llm_judge: the grade is read from a judge's reply (last match wins, in range), unreadable replies are asked
again and then unscored (422, counted, never 0), a judge that is down is the infrastructure's (503). The judge
here is a small HTTP server in the test that answers a script of replies and records what it was asked."""
import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig
from rollflow_engines.errors import UnavailableError, UnscoredError
from rollflow_engines.rewards.llm_judge import LlmJudgeConfig, judge, read_grade

from .judge_server import ScriptedJudge


@pytest.fixture
def scripted():
    made = []

    def make(*replies):
        made.append(ScriptedJudge(replies))
        return made[-1]
    yield make
    for j in made:
        j.close()


def config(url, **over):
    return {"url": url, "template": "Question: {prompt}\nAnswer: {response}\nReference: {reference}\nGrade 0-10.", **over}


@pytest.mark.parametrize("reply, grade", [
    ("Grade: 7", 7.0),
    ("The answer is wrong by 3, so 2 out of 10.\nFinal: 4", 4.0),  # the last number is the conclusion
    ("  10  ", 10.0),
    ("6.5", 6.5),
    ("I cannot tell.", None),
    ("Grade: 11", None),  # out of range: not a grade
    ("-1", None),
    ("", None),
])
def test_the_last_grade_in_range_is_read(reply, grade):
    assert read_grade(reply, LlmJudgeConfig(**config("http://x"))) == grade


def test_a_pattern_of_ones_own_and_the_range_map_onto_zero_to_one(scripted):
    j = scripted("Reasoning... [[B]] no wait, [[A]]")
    with pytest.raises(UnscoredError):  # the pattern matched, but a letter is no number: unreadable
        judge("p", "r", "ref", config(j.url, grade_pattern=r"\[\[([A-Z])\]\]", min_grade=1, max_grade=5), 10)
    j2 = scripted("Score: 2 ... final score: 4")
    reward, info = judge("p", "r", "ref", config(j2.url, grade_pattern=r"score: (\d)", min_grade=1, max_grade=5), 10)
    assert (reward, info["grade"], info["attempts"]) == (0.75, 4.0, 1)


def test_the_template_and_system_message_reach_the_judge_filled_in(scripted):
    j = scripted("9")
    judge("What is 2+2?", "4", "4", config(j.url, system="You grade answers.", max_tokens=8, temperature=0.5, seed=7, model="judge-1"), 10)
    [asked] = j.asked
    assert asked["messages"] == [{"role": "system", "content": "You grade answers."},
                                 {"role": "user", "content": "Question: What is 2+2?\nAnswer: 4\nReference: 4\nGrade 0-10."}]
    assert (asked["max_tokens"], asked["temperature"], asked["seed"], asked["model"]) == (8, 0.5, 7, "judge-1")


def test_unreadable_replies_are_asked_again_with_a_new_seed_then_read(scripted):
    j = scripted("hmm", "no idea", "Grade: 5")
    reward, info = judge("p", "r", "ref", config(j.url, attempts=3), 10)
    assert (reward, info["attempts"]) == (0.5, 3)
    assert [a["seed"] for a in j.asked] == [0, 1, 2]


def test_no_readable_grade_after_every_attempt_is_unscored_not_zero(scripted):
    j = scripted("I refuse.")
    with pytest.raises(UnscoredError, match="no readable grade in 2 replies") as e:
        judge("p", "r", "ref", config(j.url, attempts=2), 10)
    assert (e.value.status_code, e.value.code, len(j.asked)) == (422, "reward_unscored", 2)


def test_a_judge_that_is_down_or_failing_is_the_infrastructures(scripted):
    failing = scripted(None)
    with pytest.raises(UnavailableError, match="failed: HTTP 500") as e:
        judge("p", "r", "ref", config(failing.url), 10)
    assert e.value.code == "judge_unavailable"
    failing.close()
    with pytest.raises(UnavailableError, match="did not answer"):
        judge("p", "r", "ref", config(failing.url), 10)


@pytest.mark.parametrize("over, problem", [
    ({"template": "Grade {answer}"}, "unknown placeholder {answer}"),
    ({"template": "Grade {response"}, "not a valid template"),
    ({"grade_pattern": "("}, "not a regular expression"),
    ({"grade_pattern": r"\d+"}, "needs a group"),
    ({"min_grade": 5, "max_grade": 5}, "must be above min_grade"),
    ({"url": "127.0.0.1:8000"}, "should match pattern"),
    ({"attempts": 0}, "greater than or equal to 1"),
    ({"grade": 3}, "Extra inputs are not permitted"),
])
def test_bad_settings_are_named(over, problem):
    with pytest.raises(ValidationError, match=problem):
        LlmJudgeConfig(**{**config("http://x"), **over})


def test_through_reward_graded_unscored_and_unavailable_are_200_422_and_503_each_counted(scripted, tmp_path):
    graded, unreadable = scripted("Grade: 8"), scripted("?")
    down = scripted("1")
    down.close()
    options = {"snapshot_dir": str(tmp_path / "snapshots"), "sandbox_root": str(tmp_path / "sandboxes")}
    with TestClient(create_app(ServeConfig(role="env", options=options)), raise_server_exceptions=False) as server:
        def ask(j, **over):
            return server.post("/reward", json={"domain": "chat", "verifier": "llm_judge", "prompt": "p", "response": "r", "reference": "x",
                                                "config": config(j.url, **over)})
        ok, unscored, unavailable = ask(graded), ask(unreadable, attempts=2), ask(down)
        bad = ask(graded, template="{nope}")
        metrics = server.get("/metrics").text
    assert ok.status_code == 200 and ok.json()["reward"] == 0.8 and ok.json()["info"]["grade"] == 8
    assert unscored.status_code == 422 and unscored.json()["code"] == "reward_unscored"
    assert unavailable.status_code == 503 and unavailable.json()["code"] == "judge_unavailable"
    assert bad.status_code == 400 and bad.json()["problems"][0]["field"] == "config.template"
    assert 'rollflow_env_reward_unscored_total{domain="chat",verifier="llm_judge"} 1.0' in metrics
    assert 'rollflow_env_reward_infra_errors_total{domain="chat",verifier="llm_judge"} 1.0' in metrics
    assert 'rollflow_env_rewards_total{domain="chat",verifier="llm_judge"} 1.0' in metrics

//! The preference parser on the values the issue quotes, and on every preference value the
//! templates find in the shipped KnowU personas (read through the KnowU data setting) and in the
//! repository's own full-sentence persona (`datasets/knowu/personas/rosa.yaml`): a correct
//! action worded differently from the profile passes, the opposite fails.

use serde_json::{json, Value};

use super::prefs::{check, parse, situation, Requirements};
use super::tests::generated_for;
use super::Split;

fn words_of(req: &Requirements) -> (Vec<String>, Vec<String>) {
    let want = req
        .want
        .iter()
        .map(|g| {
            g.iter()
                .map(|t| t.text.clone())
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .collect();
    let avoid = req.avoid.iter().map(|t| t.text.clone()).collect();
    (want, avoid)
}

fn passes(value: &Value, text: &str) -> bool {
    check(&parse(value), text).share() >= 1.0
}

#[test]
fn the_issues_examples_check_the_right_words() {
    let cases: [(&str, &[&str], &[&str]); 7] = [
        (
            "Compared with Tuantuan,users prefer Chilemei.",
            &["chilemei"],
            &["tuantuan"],
        ),
        (
            "Less oil,less salt,no spicy flavors",
            &["oil", "salt"],
            &["spicy"],
        ),
        (
            "No black clothes and no one-piece outfits",
            &[],
            &["black", "one piece"],
        ),
        (
            "Never drinks coffee — prefers bottled iced tea",
            &["bottled iced tea"],
            &["coffee"],
        ),
        (
            "Alipay preferred over WeChat Pay",
            &["alipay"],
            &["wechat pay"],
        ),
        (
            "User likes to share photos of flowers",
            &["photos flowers"],
            &[],
        ),
        ("Avoids meetings between 9:00 - 11:30", &[], &[]),
    ];
    for (value, want, avoid) in cases {
        let req = parse(&json!(value));
        let (w, a) = words_of(&req);
        assert_eq!(w, want, "{value}: wanted");
        assert_eq!(a, avoid, "{value}: ruled out");
    }
    // The time window is a value, not words.
    let meetings = parse(&json!(
        "Avoids meetings between 9:00 - 11:30 (Deep work block)"
    ));
    assert_eq!(meetings.windows.len(), 1);
    assert_eq!(
        (meetings.windows[0].from, meetings.windows[0].to),
        (540, 690)
    );
    assert!(!meetings.windows[0].inside);
    assert!(check(&meetings, "Project sync at 14:00").share() >= 1.0);
    assert!(check(&meetings, "Project sync at 10:00").share() < 1.0);
    assert!(check(&meetings, "Project sync at 9:30 am").share() < 1.0);
    // Negated mentions in the agent's text are not violations; the preferred word negated is
    // not a match; quantity words keep their direction.
    assert!(passes(
        &json!("Iced Americano, No Sugar"),
        "iced americano, sugar-free"
    ));
    assert!(!passes(
        &json!("Iced Americano, No Sugar"),
        "iced americano with sugar"
    ));
    assert!(!passes(
        &json!("Alipay preferred over WeChat Pay"),
        "no Alipay, WeChat Pay"
    ));
    assert!(!passes(&json!("Please add extra rice"), "less rice please"));
    // Ranges and bounds are values: amounts outside them fail, with or without a space.
    let budget = json!({"budget": "8000-12000 CNY for a work laptop", "ram": "Needs ≥32GB RAM"});
    assert!(passes(&budget, "ThinkPad, 32 GB RAM, 9999 CNY"));
    assert!(!passes(&budget, "ThinkPad, 16GB RAM, 9999 CNY"));
    assert!(!passes(&budget, "ThinkPad, 32GB RAM, 15000 cny"));
    assert!(passes(
        &json!("nothing over 400 EUR"),
        "Chromebook, 399 EUR"
    ));
    assert!(!passes(&json!("nothing over 400 EUR"), "Chromebook, 450€"));
    // Keys say what a value rules out; a fallback is neither wanted nor ruled out.
    let platforms = json!({"preferred": "Taodian", "secondary": "Jingdian", "avoid": "Pinduo"});
    assert!(passes(&platforms, "Taodian"));
    assert!(!passes(&platforms, "Pinduo"));
    assert!(
        !passes(&platforms, "Jingdian"),
        "the preferred one is wanted"
    );
    // `X only if Y` is a condition on the situation: where it says Y, X is wanted in place of
    // the everyday choice; elsewhere X is neither wanted nor held against the action.
    let commute = json!("Shared bike or walk. Subway only if raining.");
    let (w, _) = words_of(&parse(&commute));
    assert_eq!(
        w,
        ["shared bike | walk"],
        "no situation: the everyday choice"
    );
    let rain = parse(&commute).in_situation("It's raining. Plan how I get to work.");
    assert_eq!(words_of(&rain).0, ["subway"]);
    assert!(check(&rain, "Take the subway, Line 4").share() >= 1.0);
    assert!(check(&rain, "Ride a shared bike").share() < 1.0);
    let sun = parse(&commute).in_situation("It's sunny. Plan how I get to work.");
    assert_eq!(words_of(&sun).0, ["shared bike | walk"]);
    assert!(check(&sun, "Ride a shared bike").share() >= 1.0);
    // `Only X if Y`, the habit's verb dropped, alternatives on either side; a negated Y in the
    // situation does not hold.
    let taxi = json!("Takes taxi only if carrying grandson or heavy rain");
    assert!(parse(&taxi).is_empty());
    let heavy = parse(&taxi).in_situation("It's raining. Plan my trip to the market.");
    assert_eq!(words_of(&heavy).0, ["taxi"]);
    assert!(check(&heavy, "Call a taxi to the market").share() >= 1.0);
    assert!(check(&heavy, "Bus 52 to the market").share() < 1.0);
    assert!(parse(&taxi)
        .in_situation("No rain today. Plan my trip to the market.")
        .is_empty());
    assert!(
        parse(&taxi)
            .in_situation("I'm carrying my grandson to the park.")
            .want
            .len()
            == 1
    );
    let didi = json!("Almost never — too expensive. Only uses Didi Express (cheapest tier) if splitting with roommates.");
    assert!(parse(&didi)
        .in_situation("It's 23:30 and I'm exhausted. How do I get home?")
        .is_empty());
    let split = parse(&didi).in_situation("Splitting a ride home with my roommates tonight.");
    assert_eq!(words_of(&split).0, ["didi express"]);
}

/// (persona, class, a correct action in other words, the opposite).
const PARAPHRASES: &[(&str, &str, &str, &str)] = &[
    ("developer", "OrderLunchPreferenceTask", "a Japanese ramen bowl", "a pepperoni pizza"),
    ("developer", "OrderLunchTradeoffTask", "order it on Tuantuan", "order it on Chilemei"),
    ("developer", "TakeoutReamarkPreferenceAskUserTask", "Please leave it at the door and send an SMS, do not knock or ring the bell.", "Knock and ring the bell when you arrive."),
    ("developer", "PrefflowDinnerComfortFoodPreferenceTask", "a quick protein bowl", "a slow-cooked lasagna"),
    ("developer", "PrefflowDietTypeOrderPreferenceTask", "a quick no-mess wrap eaten at the desk, efficiency first", "a gourmet tasting menu chosen for taste"),
    ("developer", "PrefflowCaffeineRunPreferenceTask", "Monster Ultra White, sugar-free", "Monster Energy with sugar"),
    ("developer", "BuyColaPreferenceTask", "a case of Monster Ultra White, sugar-free", "a case of Monster Energy with sugar"),
    ("developer", "BuyComputerPreferenceAskUserTask", "ThinkPad T14 running Linux, built for performance, 32 GB RAM, 9500 CNY", "Dell XPS with Windows 11, 16 GB, 15000 CNY"),
    ("developer", "SearchWhiteSneakersCheckoutPreferenceAskUserTask", "size 42 in black", "size 40 in white"),
    ("developer", "NoteTheCourierForDeliveryPreferenceAskUserTask", "Please ship with SF Express", "any budget courier is fine"),
    ("developer", "PrefflowShoppingPlatformPreferenceTask", "Jingdian", "Taodian"),
    ("developer", "PrefflowClothesPreferenceAskUserTask", "a black T-shirt, 120 CNY", "a white T-shirt, 300 CNY"),
    ("developer", "PrefflowPaymentNotePreferenceTask", "paying by Alipay", "paying by credit card"),
    ("developer", "CommuteRoutingSunnyTask", "Subway, Line 16", "Driving"),
    ("developer", "CommuteRoutingBadWeatherTask", "DiDi Premium", "walking"),
    ("developer", "MattermostLeaveNoticeTask", "- sick today\n- back tomorrow (Markdown bullet points)", "Hello everyone, I am sick today."),
    ("developer", "PrefflowProjectChannelPreferenceTask", "the DevOps channel", "town square"),
    ("developer", "ShareFavoritePhotosPreferenceAskUserTask", "our incident post-mortem", "a selfie from the weekend"),
    ("developer", "SearchTopInfoPreferenceAskUserTask", "Kubernetes news", "celebrity gossip"),
    ("developer", "PrefflowMastodonPostPreferenceTask", "open-source announcement of our new tool", "my lunch today"),
    ("student", "OrderLunchPreferenceTask", "two burgers", "a kale salad"),
    ("student", "OrderLunchTradeoffTask", "Chilemei", "Tuantuan"),
    ("student", "TakeoutReamarkPreferenceAskUserTask", "whatever is cheap, buy-1-get-1 if possible", "note my nut allergies"),
    ("student", "PrefflowDinnerComfortFoodPreferenceTask", "instant noodles delivered at 21:30", "a salad at 18:00"),
    ("student", "PrefflowDietTypeOrderPreferenceTask", "a high-calorie, low-cost combo: burgers, instant ramen and fried chicken", "a steamed vegetable salad"),
    ("student", "PrefflowCaffeineRunPreferenceTask", "a bottled iced tea", "a cup of coffee"),
    ("student", "BuyColaPreferenceTask", "Coca-Cola Classic", "Coca-Cola Zero Sugar"),
    ("student", "BuyComputerPreferenceAskUserTask", "a MacBook Air M-series for schoolwork plus a Windows desktop PC with a dedicated GPU for League of Legends at high settings; save on the Mac, spend on the gaming GPU; macOS for coding, Windows for gaming; Apple and Lenovo; 16GB RAM", "a Dell laptop with 8GB RAM"),
    ("student", "SearchWhiteSneakersCheckoutPreferenceAskUserTask", "white, size 41", "black, size 43"),
    ("student", "PrefflowShoppingPlatformPreferenceTask", "Taodian", "Jingdian"),
    ("student", "PrefflowClothesPreferenceAskUserTask", "a white tee, 80 CNY", "a black tee, 250 CNY"),
    ("student", "PrefflowPaymentNotePreferenceTask", "WeChat Pay", "Alipay"),
    ("student", "CommuteRoutingSunnyTask", "by shared bike", "by taxi"),
    ("student", "CommuteRoutingBadWeatherTask", "take the subway with my student pass", "walk"),
    ("student", "LateNightCommuteTask", "book a Didi Express and split it with the roommates", "a premium taxi"),
    ("student", "PrefflowTravelSeatPreferenceTask", "a window seat", "an aisle seat"),
    ("student", "MattermostLeaveNoticeTask", "casual Gen-Z slang: sick today, not coming lol", "Dear colleagues, I am unwell today."),
    ("student", "CalendarScheduleGroupMeetingTask", "a text-based communication thread at 15:00", "sync meetings at 09:00"),
    ("student", "PrefflowProjectChannelPreferenceTask", "the AI-Research channel", "the general channel"),
    ("student", "ShareFavoritePhotosPreferenceAskUserTask", "a meme from my Gallery", "a picture from the camera"),
    ("student", "SearchTopInfoPreferenceAskUserTask", "Bilibili tech videos, V2EX and Reddit", "CNN headlines"),
    ("student", "PrefflowMastodonPostPreferenceTask", "Finally got the game clear!", "Had a nice week"),
    ("student", "MessagesAskMomForMoneyTask", "a polite, needy ask ending in a cute emoji", "Send money now."),
    ("user", "OrderLunchPreferenceTask", "Japanese curry", "pizza"),
    ("user", "OrderLunchTradeoffTask", "Tuantuan", "Chilemei"),
    ("user", "TakeoutReamarkPreferenceAskUserTask", "extra rice please", "less rice please"),
    ("user", "PrefflowDinnerComfortFoodPreferenceTask", "Kung Pao chicken", "sushi"),
    ("user", "PrefflowDietTypeOrderPreferenceTask", "a quick, filling cafeteria noodle bowl, comfort food", "a light salad"),
    ("user", "PrefflowCaffeineRunPreferenceTask", "an iced Americano with an extra shot, sugar-free", "a hot latte with sugar"),
    ("user", "BuyColaPreferenceTask", "sugar-free Coca-Cola", "Pepsi"),
    ("user", "BuyComputerPreferenceAskUserTask", "an Apple MacBook Air", "a Dell XPS"),
    ("user", "SearchWhiteSneakersCheckoutPreferenceAskUserTask", "size 41, white", "size 44, black"),
    ("user", "NoteTheCourierForDeliveryPreferenceAskUserTask", "SF Express", "Yunda Express"),
    ("user", "PrefflowShoppingPlatformPreferenceTask", "Taodian", "Jingdian"),
    ("user", "PrefflowClothesPreferenceAskUserTask", "grey trousers", "a black one-piece dress"),
    ("user", "PrefflowPaymentNotePreferenceTask", "Alipay", "WeChat Pay"),
    ("user", "CommuteRoutingSunnyTask", "Subway Line 10", "Didi"),
    ("user", "CommuteRoutingBadWeatherTask", "Didi Premier", "walk to the station"),
    ("user", "LateNightCommuteTask", "Didi Premier home", "the night bus"),
    ("user", "PrefflowTravelSeatPreferenceTask", "aisle", "window"),
    ("user", "MattermostLeaveNoticeTask", "Direct and concise: sick today, back tomorrow.", "Hello everyone, hope you are all doing wonderfully this fine morning!"),
    ("user", "CalendarScheduleGroupMeetingTask", "14:00, 30 min", "10:00 for 60 minutes"),
    ("user", "PrefflowProjectChannelPreferenceTask", "AI-Research channel", "town square"),
    ("user", "ShareFavoritePhotosPreferenceAskUserTask", "a screenshot of an academic paper", "a sunset photo"),
    ("user", "SearchTopInfoPreferenceAskUserTask", "HuggingFace Papers", "sports news"),
    ("user", "PrefflowMastodonPostPreferenceTask", "my academic work: research updates on Mastodon", "My cat is cute"),
    ("rosa", "OrderLunchPreferenceTask", "Peruvian ceviche", "a burger"),
    ("rosa", "OrderLunchTradeoffTask", "Chilemei", "Tuantuan"),
    ("rosa", "TakeoutReamarkPreferenceAskUserTask", "Ring the bell twice; don't leave the bag at the door.", "Leave the bag at the door."),
    ("rosa", "PrefflowDinnerComfortFoodPreferenceTask", "a warm lentil soup without bread", "lentil soup with bread"),
    ("rosa", "PrefflowCaffeineRunPreferenceTask", "rooibos tea, no sugar", "coffee with sugar"),
    ("rosa", "BuyColaPreferenceTask", "sparkling water", "Coca-Cola"),
    ("rosa", "BuyComputerPreferenceAskUserTask", "a lightweight Chromebook for 350 EUR", "a gaming laptop for 1200 EUR"),
    ("rosa", "SearchWhiteSneakersCheckoutPreferenceAskUserTask", "navy sneakers, size 38", "red sneakers, size 40"),
    ("rosa", "NoteTheCourierForDeliveryPreferenceAskUserTask", "SEUR", "Correos"),
    ("rosa", "PrefflowShoppingPlatformPreferenceTask", "Taodian", "Jingdian"),
    ("rosa", "PrefflowClothesPreferenceAskUserTask", "a blue cotton shirt", "a yellow polyester shirt"),
    ("rosa", "PrefflowPaymentNotePreferenceTask", "Bizum", "credit card"),
    ("rosa", "CommuteRoutingSunnyTask", "cycle to work by bike", "drive to work"),
    ("rosa", "CommuteRoutingBadWeatherTask", "Metro Line 3", "a taxi"),
    ("rosa", "LateNightCommuteTask", "a Cabify ride home", "walk home"),
    ("rosa", "PrefflowTravelSeatPreferenceTask", "aisle seat", "window seat"),
    ("rosa", "MattermostLeaveNoticeTask", "Short and warm: off sick today. Rosa", "Dear team, I regret to inform you of my illness."),
    ("rosa", "CalendarScheduleGroupMeetingTask", "Tuesday 11:00", "Friday 09:00"),
    ("rosa", "ShareFavoritePhotosPreferenceAskUserTask", "a photo of my balcony plants", "a selfie"),
    ("rosa", "SearchTopInfoPreferenceAskUserTask", "pharmacology news and flamenco", "football"),
    ("rosa", "PrefflowMastodonPostPreferenceTask", "a recipe for gazpacho", "a selfie at the beach"),
    ("rosa", "MessagesAskMomForMoneyTask", "Mamá, could you lend me some money? besos", "Dear Mother, please send money."),
];

#[test]
fn every_persona_preference_passes_in_other_words_and_fails_opposite() {
    let knowu = crate::knowu::data::for_tests("every_persona_preference_passes_in_other_words");
    let mut personas = vec![(
        "rosa",
        super::tests::repo().join("datasets/knowu/personas/rosa.yaml"),
    )];
    if let Some(dir) = &knowu {
        for p in ["developer", "student", "user"] {
            personas.push((p, dir.join(format!("user_profile/{p}.yaml"))));
        }
    }
    let mut checked = 0;
    for (name, path) in personas {
        for t in generated_for(name, &path).tasks {
            if t.info.split != Split::Personalized || t.info.judged.is_none() {
                continue;
            }
            let class = t.info.class_name.as_str();
            let value = t.info.preference.clone().unwrap_or_default();
            // The task's situation decides its `only if` conditions (student's subway in the rain).
            let here = situation(
                &t.bundle.task.instruction,
                &crate::knowu::profile::text(&value),
            );
            let req = parse(&value).in_situation(&here);
            let Some((_, _, right, wrong)) = PARAPHRASES
                .iter()
                .find(|(p, c, _, _)| *p == name && *c == class)
            else {
                panic!("{name} {class}: no paraphrase for {value}");
            };
            let good = check(&req, right);
            assert!(
                good.share() >= 1.0,
                "{name} {class}: {value} vs {right:?}: {:?}",
                good.failed
            );
            let bad = check(&req, wrong);
            assert!(
                bad.share() < 1.0,
                "{name} {class}: {value} vs opposite {wrong:?} passes"
            );
            // The reference agent's own rendering passes too.
            assert!(
                check(
                    &req,
                    t.bundle.task.reference_solution[0].to_string().as_str()
                )
                .share()
                    >= 1.0,
                "{name} {class}: the reference solution {} fails {value}",
                t.bundle.task.reference_solution[0]
            );
            checked += 1;
        }
    }
    // rosa 22, developer 20, student 23 (LateNightCommute with her roommates), user 23.
    let expected = if knowu.is_some() {
        22 + 20 + 23 + 23
    } else {
        22
    };
    assert_eq!(checked, expected, "preference values checked");
}

/// "X-free" rules X out only when written as one compound: in "Bus (Senior card = free rides)"
/// the card is what makes her rides free, not something to avoid.
#[test]
fn free_rules_out_only_the_word_compounded_with_it() {
    let card = json!("Bus (Senior card = free rides)");
    let req = parse(&card);
    assert!(
        req.avoid.iter().all(|t| !format!("{t:?}").contains("card")),
        "{req:?}"
    );
    assert!(passes(&card, "Take bus 12 with her senior card"));
    let sugar = json!("iced tea, sugar-free");
    assert!(passes(&sugar, "an iced tea without sugar"));
    assert!(!passes(&sugar, "an iced tea with sugar"));
    assert!(!passes(&json!("gluten free pasta"), "pasta with gluten"));
}

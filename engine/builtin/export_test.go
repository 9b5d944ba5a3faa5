package builtin

// RaceSlack lets the external tests widen timing bounds under -race.
const RaceSlack = raceSlack
